package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/internal/hiddenchar"
	"github.com/bumperdev/bumper/internal/jsondoc"
)

// secretPattern is one kind of credential a bundle must never carry.
type secretPattern struct {
	kind string
	re   *regexp.Regexp
	// may is a quick test that s could hold a match; the pattern runs only then.
	may func(s string) bool
	// mixed, when set, asks that a match hold a digit, an upper-case and a lower-case
	// letter: random keys do, words and identifiers rarely do.
	mixed bool
}

func contains(sub string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, sub) }
}

// secretPatterns are checked in order; the first that matches names the kind.
var secretPatterns = []secretPattern{
	{kind: "GitHub token", re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`), may: contains("_")},
	{kind: "GitHub fine-grained token", re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`), may: contains("github_pat_")},
	{kind: "Anthropic API key", re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{16,}`), may: contains("sk-ant-")},
	{kind: "OpenAI API key", re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`), may: contains("sk-"), mixed: true},
	{kind: "bearer token", re: regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*`), may: containsBearer, mixed: true},
	{kind: "PEM private key", re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----`), may: contains("PRIVATE KEY")},
}

// containsBearer reports whether s holds "bearer" in any case.
func containsBearer(s string) bool {
	for i := 0; i+6 <= len(s); i++ {
		if s[i]|0x20 == 'b' && strings.EqualFold(s[i:i+6], "bearer") {
			return true
		}
	}
	return false
}

// secretIn names the kind of the first secret-looking text in s, or "". Text split by
// hidden characters (a zero-width space inside a token) is found too.
func secretIn(s string) string {
	if kind := matchSecret(s); kind != "" {
		return kind
	}
	if hasHidden(s) {
		return matchSecret(stripHidden(s))
	}
	return ""
}

// hasHidden reports whether s holds a hidden rune (internal/hiddenchar).
func hasHidden(s string) bool {
	for _, r := range s {
		if (r < 0x20 || r >= 0x7F) && hiddenchar.Is(r) {
			return true
		}
	}
	return false
}

func matchSecret(s string) string {
	for _, p := range secretPatterns {
		if !p.may(s) {
			continue
		}
		for _, loc := range p.re.FindAllStringIndex(s, -1) {
			if !p.mixed || isMixed(s[loc[0]:loc[1]]) {
				return p.kind
			}
		}
	}
	return ""
}

// redactSecrets replaces every secret-looking text in s with "[redacted <kind>]"; when
// a secret shows only once hidden characters are dropped, all of s is replaced.
func redactSecrets(s string) (string, bool) {
	changed := false
	for _, p := range secretPatterns {
		if !p.may(s) {
			continue
		}
		s = p.re.ReplaceAllStringFunc(s, func(m string) string {
			if p.mixed && !isMixed(m) {
				return m
			}
			changed = true
			return "[redacted " + p.kind + "]"
		})
	}
	if kind := secretIn(s); kind != "" {
		return "[redacted " + kind + ", split by hidden characters]", true
	}
	return s, changed
}

func isMixed(s string) bool {
	var digit, upper, lower bool
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= 'a' && r <= 'z':
			lower = true
		}
	}
	return digit && upper && lower
}

// findSecrets reports every string (and object key) of the JSON document data that
// looks like a secret, by JSON pointer and kind.
func findSecrets(data []byte) ([]Problem, error) {
	v, err := decodeGeneric(data)
	if err != nil {
		return nil, err
	}
	var out []Problem
	walkStrings(v, "", func(path, s string) string {
		if kind := secretIn(s); kind != "" {
			out = append(out, Problem{Path: path, Message: "looks like a " + kind + "; a bundle must never carry one"})
		}
		return s
	})
	return out, nil
}

// Redact replaces every text in the bundle that looks like a secret (what Validate
// refuses) with "[redacted <kind>]" and returns the JSON pointers of the strings it
// changed. The runner calls it before Validate for what it does not control, such as
// test output whose fixtures hold example keys.
func (e *Evidence) Redact() ([]string, error) {
	data, err := e.Marshal()
	if err != nil {
		return nil, err
	}
	v, err := decodeGeneric(data)
	if err != nil {
		return nil, err
	}
	var paths []string
	v = walkStrings(v, "", func(path, s string) string {
		r, changed := redactSecrets(s)
		if changed {
			paths = append(paths, path)
		}
		return r
	})
	if len(paths) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the redacted evidence: %w", err)
	}
	var n Evidence
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("failed to decode the redacted evidence: %w", err)
	}
	*e = n
	return paths, nil
}

func decodeGeneric(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("failed to read the evidence: %w", err)
	}
	return v, nil
}

// walkStrings calls f on every string value and object key of v, in a fixed order,
// with its JSON pointer, and returns v with each string replaced by f's result (keys
// are reported but kept).
func walkStrings(v any, path string, f func(path, s string) string) any {
	switch x := v.(type) {
	case string:
		return f(path, x)
	case []any:
		for i := range x {
			x[i] = walkStrings(x[i], path+"/"+strconv.Itoa(i), f)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "/" + jsondoc.EscapePointer(k)
			f(p, k)
			x[k] = walkStrings(x[k], p, f)
		}
	}
	return v
}
