package ledger

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// Sealer signs status records and checks their signatures, and names revisions by a
// short keyed id. Only `serve` holds its keys.
//
// Why sign: the status comment is authored by the bot, and GitHub lets anyone holding an
// installation token edit it. The App must not trust a record it did not write, so every
// record carries an HMAC-SHA256 over its exact JSON bytes.
//
// Why a keyed short id: approvers type `/approve ID` with a short id. A plain hash prefix
// of 48 bits can be collided offline in seconds by whoever writes the issue (two bodies,
// one innocent, one with a payload, same prefix). A prefix of an HMAC cannot be computed
// without the key, so finding a collision would take one visible issue edit per guess.
type Sealer struct {
	record [][]byte // record signing keys; [0] signs, all verify
	short  []byte   // short-id key, from the current key only
	nonce  []byte   // dispatch-nonce key, from the current key only
}

// Domain labels: the same secret signs run tokens, so each use derives its own key.
const (
	labelRecord  = "bumper status record v2"
	labelShortID = "bumper revision id v1"
	labelNonce   = "bumper dispatch nonce v1"
)

// ShortIDLen is how many hex digits a short revision id has.
const ShortIDLen = 12

// NewSealer derives the record keys from the App's secret key (the run-token key) and
// from previous keys still accepted while a rotation is under way. Records are signed with
// the current key only; a record signed with a previous key verifies and is re-signed
// on its next write.
func NewSealer(current []byte, previous ...[]byte) (*Sealer, error) {
	if len(current) < 32 {
		return nil, errors.New("failed to create the record sealer: the key must be at least 32 bytes")
	}
	s := &Sealer{short: derive(current, labelShortID), nonce: derive(current, labelNonce)}
	for _, k := range append([][]byte{current}, previous...) {
		if len(k) < 32 {
			return nil, errors.New("failed to create the record sealer: a previous key is shorter than 32 bytes")
		}
		s.record = append(s.record, derive(k, labelRecord))
	}
	return s, nil
}

func derive(key []byte, label string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	return m.Sum(nil)
}

func mac(key, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(payload)
	return m.Sum(nil)
}

func (s *Sealer) sign(payload []byte) string { return hex.EncodeToString(mac(s.record[0], payload)) }

func (s *Sealer) verify(payload []byte, sig string) bool {
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	for _, k := range s.record {
		if hmac.Equal(got, mac(k, payload)) {
			return true
		}
	}
	return false
}

// ShortID is the short, keyed id of a full revision that the status comment shows and
// `/approve ID` names.
func (s *Sealer) ShortID(revision string) string {
	return hex.EncodeToString(mac(s.short, []byte(revision)))[:ShortIDLen]
}

// DispatchNonce is the single-use nonce of the dispatch named key (a repository's
// item's attempt of a revision), which its run exchanges for credentials. It is keyed, so nobody without
// serve's key can compute it, and the same for every replica, so a replica that takes
// over a dispatch whose replica died after dispatching can adopt the run that is already
// there (its exchange carries this nonce) rather than dispatch the attempt again.
func (s *Sealer) DispatchNonce(key string) string {
	return hex.EncodeToString(mac(s.nonce, []byte(key)))
}

// labelCounter separates the day counters' signatures from the records'.
const labelCounter = "bumper day counter v1\x00"

// SignCounter signs a day counter's JSON (written without its signature): the counters
// are refs in repositories writers can push to, and serve grants nothing from one it
// did not write.
func (s *Sealer) SignCounter(payload []byte) string {
	return s.sign(append([]byte(labelCounter), payload...))
}

// VerifyCounter checks SignCounter's signature, with the current or a previous key.
func (s *Sealer) VerifyCounter(payload []byte, sig string) bool {
	return s.verify(append([]byte(labelCounter), payload...), sig)
}
