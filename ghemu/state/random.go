package state

import (
	"crypto/rand"
	"fmt"
)

// RandomToken returns a GitHub-shaped token: a prefix ("ghs_", "ghp_", "whsec_", …)
// and 36 base62 characters.
func RandomToken(prefix string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 36)
	rand.Read(b) // never fails: crypto/rand crashes the program instead
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b)
}

// NewGUID returns a random RFC 4122 version 4 UUID, the shape of X-GitHub-Delivery.
func NewGUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
