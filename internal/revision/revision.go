// Package revision is the one form every hash that binds something in Bumper takes (an
// approval, a plan, a policy, evidence): "sha256:" and all 64 lower-case hex digits of
// the content's SHA-256. Nothing is truncated: a 64-bit prefix let two issue bodies that
// differ in an invisible HTML comment collide in seconds.
package revision

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

const prefix = "sha256:"

// Of is the revision of content.
func Of(content []byte) string {
	sum := sha256.Sum256(content)
	return prefix + hex.EncodeToString(sum[:])
}

// Valid reports whether s is a full-length revision as Of makes it.
func Valid(s string) bool {
	hexPart, ok := strings.CutPrefix(s, prefix)
	if !ok || len(hexPart) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil && strings.ToLower(hexPart) == hexPart
}

// IsObjectID reports whether s is a full git object id of either format: 40 lower-case
// hex digits (SHA-1) or 64 (SHA-256), as GitHub may name commits of either.
func IsObjectID(s string) bool {
	return (len(s) == 40 || len(s) == 64) && strings.Trim(s, "0123456789abcdef") == ""
}

// IsCommitID reports whether s is a full git commit id: 40 lower-case hex digits (the
// SHA-1 object format, the one Bumper's git handling accepts). Content named by one
// never changes, which is what lets it be cached.
func IsCommitID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
