package pktline

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/textcut"
)

// ZeroOID reports whether oid is the all-zero object name git uses for "no object"
// (the old side of a create, the new side of a delete).
func ZeroOID(oid string) bool {
	return oid != "" && strings.Trim(oid, "0") == ""
}

// CheckOID checks that oid is a full object name: 40 (SHA-1) or 64 (SHA-256) lowercase
// hex digits, the only form git puts on the wire.
func CheckOID(oid string) error {
	if len(oid) != 40 && len(oid) != 64 {
		return fmt.Errorf("object name %q must be 40 or 64 hex digits, not %d characters", truncate(oid), len(oid))
	}
	for i := 0; i < len(oid); i++ {
		c := oid[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("object name %q has a character that is not lowercase hex at offset %d", truncate(oid), i)
		}
	}
	return nil
}

// CheckRefName checks a full reference name against git check-ref-format's rules, and
// additionally requires the "refs/" prefix and valid UTF-8: every ref a push may name
// lives under refs/, and a name git itself would refuse must not reach a policy
// decision either.
func CheckRefName(name string) error {
	if !strings.HasPrefix(name, "refs/") {
		return fmt.Errorf("ref name %q must start with refs/", truncate(name))
	}
	if len(name) > MaxPayloadLen {
		return fmt.Errorf("ref name is %d bytes long", len(name))
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("ref name %q is not valid UTF-8", truncate(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("ref name %q contains control character %#02x", truncate(name), c)
		}
		switch c {
		case ' ', '~', '^', ':', '?', '*', '[', '\\':
			return fmt.Errorf("ref name %q contains forbidden character %q", truncate(name), c)
		}
	}
	switch {
	case strings.Contains(name, ".."):
		return fmt.Errorf("ref name %q contains \"..\"", truncate(name))
	case strings.Contains(name, "@{"):
		return fmt.Errorf("ref name %q contains \"@{\"", truncate(name))
	case strings.HasSuffix(name, "/"):
		return fmt.Errorf("ref name %q ends with /", truncate(name))
	case strings.HasSuffix(name, "."):
		return fmt.Errorf("ref name %q ends with a dot", truncate(name))
	}
	for _, part := range strings.Split(name, "/") {
		switch {
		case part == "":
			return fmt.Errorf("ref name %q has an empty component (//)", truncate(name))
		case strings.HasPrefix(part, "."):
			return fmt.Errorf("ref name %q has a component starting with a dot", truncate(name))
		case strings.HasSuffix(part, ".lock"):
			return fmt.Errorf("ref name %q has a component ending with .lock", truncate(name))
		}
	}
	return nil
}

// truncate keeps error messages short when the input is hostile.
func truncate(s string) string { return textcut.Clip(s, 120, textcut.Ellipsis) }
