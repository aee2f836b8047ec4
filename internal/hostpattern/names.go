package hostpattern

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// NormalizeName lowercases a host name, drops one trailing dot and checks that it is a
// plausible DNS name: labels of letters, digits, '-' or '_', 1 to 63 bytes, 253 in all.
// Anything else (NUL, control characters, spaces, '%', empty labels) is an error.
func NormalizeName(host string) (string, error) {
	if host == "" {
		return "", errors.New("empty host")
	}
	host = strings.TrimSuffix(host, ".")
	if len(host) > MaxNameLen {
		return "", fmt.Errorf("name is %d bytes long, more than the DNS limit of %d", len(host), MaxNameLen)
	}
	lower := true
	label := 0
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		case c >= 'A' && c <= 'Z':
			lower = false
		case c == '.':
			if label == 0 {
				return "", errors.New("empty label in name")
			}
			label = 0
			continue
		default:
			return "", fmt.Errorf("byte %q at offset %d is not allowed in a host name", c, i)
		}
		label++
		if label > 63 {
			return "", errors.New("label longer than 63 bytes")
		}
	}
	if label == 0 {
		return "", errors.New("empty label in name")
	}
	if !lower {
		host = strings.ToLower(host)
	}
	return host, nil
}

// ParseIPLiteral reports whether a normalised name would be taken as an IPv4 address by a
// URL parser or inet_aton: its last label is a number (decimal, 0-prefixed octal or 0x
// hex). Then addr is the address it denotes, or invalid if the number is out of range
// (`999.1.1.1`). Forms such as `2130706433`, `0177.0.0.1`, `0x7f.1` and `127.1` all count.
func ParseIPLiteral(name string) (addr netip.Addr, isIP bool) {
	labels := strings.Split(name, ".")
	if !isNumber(labels[len(labels)-1]) {
		return netip.Addr{}, false
	}
	if len(labels) > 4 {
		return netip.Addr{}, true
	}
	nums := make([]uint64, len(labels))
	for i, l := range labels {
		n, ok := parseNumber(l)
		if !ok {
			return netip.Addr{}, true
		}
		nums[i] = n
	}
	// inet_aton: all but the last part are single bytes; the last fills the rest.
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, true
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, true
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func isNumber(l string) bool {
	if l == "" {
		return false
	}
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		for i := 0; i < len(h); i++ {
			if !isHex(h[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
}

func parseNumber(l string) (uint64, bool) {
	base := 10
	switch {
	case strings.HasPrefix(l, "0x"):
		l, base = l[2:], 16
		if l == "" {
			return 0, true // "0x" alone is zero for inet_aton and WHATWG
		}
	case len(l) > 1 && l[0] == '0':
		l, base = l[1:], 8
	}
	n, err := strconv.ParseUint(l, base, 32)
	return n, err == nil
}
