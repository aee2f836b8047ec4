// Package attest is Bumper's attested evidence: an in-toto Statement (v1) about a run's
// head commit and its evidence.json, with Bumper's predicate (PredicateType: the work
// item, its approval, the policy, the image and environment, the harness, the
// verification, the gates and the cost), signed by serve in a DSSE envelope with a key
// that no runner and no VM ever holds, and verified offline against serve's public keys.
//
// The Statement and its resource descriptors are the in-toto attestation framework's own
// Go bindings (github.com/in-toto/attestation/go/v1) and the envelope, with its
// pre-authentication encoding, is go-securesystemslib's dsse: nothing of either format is
// written by hand here. What this package adds is Bumper's predicate, the key (Ed25519,
// PKCS#8 and PKIX PEM, named by the SHA-256 of its public key's DER), and a verification
// that fails closed on anything serve would not have written: more than one signature, an
// unknown key, fields the signature does not cover, another payload or predicate type,
// subjects other than exactly the commit and the evidence, duplicate or misspelled keys,
// and envelopes larger than MaxEnvelopeBytes. The App (which signs), the runner (which
// will write the bundle) and `bumper evidence verify` share it.
package attest
