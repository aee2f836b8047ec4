package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bumperdev/bumper/action/gates"
	"github.com/bumperdev/bumper/internal/hiddenchar"
	"github.com/bumperdev/bumper/internal/jsondoc"
	"github.com/bumperdev/bumper/internal/textcut"
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
//
// The prefixed tokens match wherever they start, not only after a word boundary: text a
// run quotes writes them glued to what precedes (URL-encoded, "access_token%3Dghs_…";
// escaped, "\\nghp_…"; in a name, "TOKEN_ghp_…"). Their prefixes are distinctive enough
// that a match inside a longer word is still worth redacting. "sk-" alone is not (it
// ends "task-", "disk-"): it needs a boundary, a URL-encoded byte or an escape before it.
var secretPatterns = []secretPattern{
	{kind: "GitHub token", re: regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{20,}`), may: contains("_")},
	{kind: "GitHub fine-grained token", re: regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`), may: contains("github_pat_")},
	{kind: "Anthropic API key", re: regexp.MustCompile(`sk-ant-[A-Za-z0-9_-]{16,}`), may: contains("sk-ant-")},
	{kind: "OpenAI API key", re: regexp.MustCompile(`(?:\b|%[0-9A-Fa-f]{2}|\\[a-z])sk-[A-Za-z0-9_-]{20,}`), may: contains("sk-"), mixed: true},
	{kind: "bearer token", re: regexp.MustCompile(`(?i)(?:\b|%[0-9a-f]{2})bearer(?:\s+|%20|\+)[A-Za-z0-9._~+/-]{16,}=*`), may: containsBearer, mixed: true},
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

// stripHidden drops hidden runes (internal/hiddenchar), to find secrets split by them.
func stripHidden(s string) string {
	return strings.Map(func(r rune) rune {
		if hiddenchar.Is(r) {
			return -1
		}
		return r
	}, s)
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
	// The output gates know more formats (AWS, GCP, Azure, Slack, npm, Stripe, JWTs,
	// generic assignments): what they find is masked too.
	if m, ok := gates.MaskText(s); ok {
		return m, true
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
func findSecrets(data []byte) ([]jsondoc.Problem, error) {
	v, err := decodeGeneric(data)
	if err != nil {
		return nil, err
	}
	var out []jsondoc.Problem
	walkStrings(v, "", func(path, s string) string {
		if kind := secretIn(s); kind != "" {
			out = append(out, jsondoc.Problem{Path: path, Message: "looks like a " + kind + "; a bundle must never carry one"})
			return RedactText(s) // so that no pointer under a key quotes it
		}
		return s
	})
	return out, nil
}

// RedactText is s with every secret-looking text replaced as Redact replaces it in a
// bundle: for what goes out beside the bundle, such as the run's reason.
func RedactText(s string) string {
	r, _ := redactSecrets(s)
	return r
}

// Redact replaces every text in the bundle that looks like a secret (what Validate
// refuses), object keys included (a tool's name), with "[redacted <kind>]", and returns
// the JSON pointers of the strings it changed. A redacted string is never longer than
// the original (the schema's bounds hold: it is cut, and the cut keeps the start of the
// mark), and keys that redact to the same text have their counts added. The runner
// calls it on every bundle before validating, publishing or writing it: the bundle
// quotes much that neither the runner nor the repository controls.
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
		if !changed {
			return s
		}
		paths = append(paths, path)
		if n := utf8.RuneCountInString(s); utf8.RuneCountInString(r) > n {
			r, _ = textcut.Runes(r, n)
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
// with its JSON pointer (a key's is its object's), and returns v with each string and key replaced by f's result.
// Two keys that f makes one are merged: counts added, anything else kept under the key
// with " (2)", " (3)", … after it, so nothing is lost.
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
		out := make(map[string]any, len(x))
		for _, k := range keys {
			// A key is reported at its object's pointer, and what lies under it at the
			// pointer f's key makes: a pointer must not quote a secret.
			nk := f(path, k)
			val := walkStrings(x[k], path+"/"+jsondoc.EscapePointer(nk), f)
			if prev, dup := out[nk]; dup {
				if sum, ok := addCounts(prev, val); ok {
					out[nk] = sum
					continue
				}
				base := nk
				for i := 2; dup; i++ {
					nk = base + " (" + strconv.Itoa(i) + ")"
					_, dup = out[nk]
				}
			}
			out[nk] = val
		}
		return out
	}
	return v
}

// addCounts adds two JSON integers.
func addCounts(a, b any) (json.Number, bool) {
	x, okA := a.(json.Number)
	y, okB := b.(json.Number)
	if !okA || !okB {
		return "", false
	}
	i, errA := x.Int64()
	j, errB := y.Int64()
	if errA != nil || errB != nil {
		return "", false
	}
	return json.Number(strconv.FormatInt(i+j, 10)), true
}
