package gates

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/hiddenchar"
)

// secretRule is one credential format. The formats follow gitleaks' default rules
// (github.com/gitleaks/gitleaks, config/gitleaks.toml, MIT): its detector as a library
// brings some 70 modules (archive readers, a WebAssembly runtime, viper) into the
// runner for these few dozen expressions, so they are kept here instead, each with
// real positives and negatives in testdata/secrets.txt.
type secretRule struct {
	kind string
	re   *regexp.Regexp
	// group is the submatch that is the secret (0: all of it).
	group int
	// minEntropy, when set, asks that the secret's Shannon entropy (bits a character)
	// reach it: random keys do, words and placeholders do not.
	minEntropy float64
	// keywords are lower-case strings one of which a line must hold for the rule to
	// run: a quick test before the expression (the gate's cost is mostly these).
	keywords []string
	// joinable rules have a distinctive prefix: they are also run over added lines
	// joined, to find a token split across lines.
	joinable bool
}

var secretRules = []secretRule{
	{kind: "GitHub personal access token", re: regexp.MustCompile(`ghp_[0-9A-Za-z]{36}`), keywords: []string{"ghp_"}, joinable: true},
	{kind: "GitHub OAuth token", re: regexp.MustCompile(`gho_[0-9A-Za-z]{36}`), keywords: []string{"gho_"}, joinable: true},
	{kind: "GitHub App token", re: regexp.MustCompile(`(?:ghu|ghs)_[0-9A-Za-z]{36}`), keywords: []string{"ghu_", "ghs_"}, joinable: true},
	{kind: "GitHub refresh token", re: regexp.MustCompile(`ghr_[0-9A-Za-z]{36}`), keywords: []string{"ghr_"}, joinable: true},
	{kind: "GitHub fine-grained token", re: regexp.MustCompile(`github_pat_[0-9A-Za-z_]{82}`), keywords: []string{"github_pat_"}, joinable: true},
	{kind: "AWS access key ID", re: regexp.MustCompile(`\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b`), group: 1, minEntropy: 3, keywords: []string{"akia", "asia", "abia", "acca", "a3t"}, joinable: true},
	{kind: "AWS secret access key", re: regexp.MustCompile(`(?i)aws.{0,20}?(?:secret|key).{0,20}?['"=:\s]\s*['"]?([A-Za-z0-9/+]{40})\b`), group: 1, minEntropy: 4, keywords: []string{"aws"}},
	{kind: "GCP API key", re: regexp.MustCompile(`\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)`), group: 1, minEntropy: 3.5, keywords: []string{"aiza"}, joinable: true},
	{kind: "GCP service account key", re: regexp.MustCompile(`"private_key_id"\s*:\s*"([0-9a-f]{40})"`), group: 1, keywords: []string{"private_key_id"}},
	{kind: "Azure storage account key", re: regexp.MustCompile(`(?i)AccountKey=([A-Za-z0-9+/]{86}==)`), group: 1, keywords: []string{"accountkey"}},
	{kind: "Azure AD client secret", re: regexp.MustCompile(`(?:^|[\s'"=:(,])([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34})(?:$|[\s'",;)])`), group: 1, minEntropy: 3, keywords: []string{"q~"}},
	{kind: "Slack token", re: regexp.MustCompile(`xox[bpares]-[0-9A-Za-z-]{10,}`), keywords: []string{"xox"}, joinable: true},
	{kind: "Slack webhook", re: regexp.MustCompile(`hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}`), keywords: []string{"hooks.slack.com"}, joinable: true},
	{kind: "npm token", re: regexp.MustCompile(`npm_[0-9A-Za-z]{36}`), minEntropy: 3.5, keywords: []string{"npm_"}, joinable: true},
	{kind: "npm registry auth", re: regexp.MustCompile(`(?i)_(?:authToken|auth|password)\s*=\s*['"]?([^\s'"$]{16,})`), group: 1, minEntropy: 3.5, keywords: []string{"_auth"}},
	{kind: "Stripe secret key", re: regexp.MustCompile(`(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,99}`), keywords: []string{"_live_", "_test_"}, joinable: true},
	{kind: "Anthropic API key", re: regexp.MustCompile(`sk-ant-(?:api|admin)\d\d-[0-9A-Za-z_-]{40,}`), keywords: []string{"sk-ant-"}, joinable: true},
	{kind: "OpenAI API key", re: regexp.MustCompile(`sk-(?:proj-|svcacct-|admin-)?[0-9A-Za-z_-]{20,}T3BlbkFJ[0-9A-Za-z_-]{20,}`), keywords: []string{"t3blbkfj"}, joinable: true},
	{kind: "private key", re: regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`), keywords: []string{"private key"}, joinable: true},
	{kind: "JWT", re: regexp.MustCompile(`\b(ey[A-Za-z0-9]{17,}\.ey[A-Za-z0-9/\\_-]{17,}\.[A-Za-z0-9/\\_-]{10,}={0,2})`), group: 1, keywords: []string{".ey"}, joinable: true},
	{kind: "generic secret", re: regexp.MustCompile(`(?i)(?:api[_.-]?key|apikey|secret|token|passw(?:or)?d|credential|auth[_.-]?key|access[_.-]?key|private[_.-]?key|client[_.-]?secret)[\w.-]{0,20}["']?\s*(?::=|=>|=|:|,)\s*["'` + "`" + `]?([0-9A-Za-z_+/=.~-]{16,})`), group: 1, minEntropy: 3.6,
		keywords: []string{"key", "secret", "token", "pass", "credential", "auth"}},
}

// secretHit is a secret found at a byte offset of the scanned text.
type secretHit struct {
	kind, secret string
	at           int
}

// findSecrets finds the secrets of one line (or joined text): each rule's matches,
// and those of base64 strings decoded.
func findSecrets(s string, joinedOnly bool) []secretHit {
	var hits []secretHit
	lower := strings.ToLower(s)
	for _, r := range secretRules {
		if joinedOnly && !r.joinable {
			continue
		}
		if !containsAny(lower, r.keywords) {
			continue
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
			start, end := m[2*r.group], m[2*r.group+1]
			secret := s[start:end]
			if r.minEntropy > 0 && (entropy(secret) < r.minEntropy || placeholder(secret)) {
				continue
			}
			if r.kind == "generic secret" && !mixed(secret) {
				continue
			}
			hits = append(hits, secretHit{kind: r.kind, secret: secret, at: start})
		}
	}
	if !joinedOnly {
		for _, m := range base64Runs(s) {
			dec, ok := decodeBase64(s[m[0]:m[1]])
			if !ok {
				continue
			}
			for _, h := range findSecrets(dec, false) {
				hits = append(hits, secretHit{kind: h.kind + " (base64-encoded)", secret: s[m[0]:m[1]], at: m[0]})
			}
		}
	}
	return hits
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// minBase64Run is how long a run of base64 must be to hold a token.
const minBase64Run = 28

// base64Runs are the runs of base64 long enough to hold a token in s, each with up to
// two padding characters after it: what `[A-Za-z0-9+/_-]{28,}={0,2}` matches, found in
// one pass (the expression's backtracking was most of the gates' time on long output).
func base64Runs(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); {
		if !isBase64Char(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isBase64Char(s[j]) {
			j++
		}
		if j-i >= minBase64Run {
			end := j
			for end < len(s) && end-j < 2 && s[end] == '=' {
				end++
			}
			out = append(out, [2]int{i, end})
			j = end
		}
		i = j
	}
	return out
}

func isBase64Char(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-'
}

// decodeBase64 decodes standard or URL base64 (padded or not) into printable text.
func decodeBase64(s string) (string, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err != nil || !utf8.Valid(b) {
			continue
		}
		printable := true
		for _, r := range string(b) {
			if r < 0x20 && r != '\n' && r != '\t' && r != '\r' {
				printable = false
				break
			}
		}
		if printable {
			return string(b), true
		}
	}
	return "", false
}

// entropy is s's Shannon entropy in bits a character.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	n := 0
	for _, r := range s {
		counts[r]++
		n++
	}
	var h float64
	for _, c := range counts {
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return h
}

// placeholder reports a value that stands for a secret without being one.
func placeholder(s string) bool {
	l := strings.ToLower(s)
	for _, w := range []string{"example", "xxxx", "placeholder", "changeme", "your_", "your-", "dummy", "redacted", "sample", "${", "{{"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// mixed asks that a generic secret hold a digit and a letter: identifiers and words
// (a Go name assigned to "token") do not.
func mixed(s string) bool {
	var digit, letter bool
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			letter = true
		}
	}
	return digit && letter
}

// Mask is how a finding names a secret: its kind's first characters and its length,
// never enough of it to use or to guess.
func Mask(secret string) string {
	keep := 4
	if len(secret) < 16 {
		keep = 0
	}
	return fmt.Sprintf("%s%s (%d characters)", secret[:keep], strings.Repeat("*", 8), utf8.RuneCountInString(secret))
}

// MaskText is s with every secret the secrets gate finds in it masked (Mask), for
// text that goes out beside the findings: a file's name, a line of the evidence. A text
// whose secret shows only once hidden characters are dropped is masked whole.
func MaskText(s string) (string, bool) {
	plain := stripHidden(s)
	hits := findSecrets(plain, false)
	if len(hits) == 0 {
		return s, false
	}
	if plain != s {
		return fmt.Sprintf("[masked: %d characters holding a secret]", utf8.RuneCountInString(s)), true
	}
	for _, h := range hits {
		s = strings.ReplaceAll(s, h.secret, Mask(h.secret))
	}
	return s, true
}

// MaskLines is text of many lines with every secret the secrets gate finds masked, a
// line at a time as MaskText masks one, for output as it streams (a job log). A line at
// a time is faster than the whole text at once: each rule's keyword test then skips
// most lines, where over a block of output some keyword is nearly always there.
func MaskLines(b []byte) []byte {
	var out []byte
	for rest, at := b, 0; len(rest) > 0; {
		n := bytes.IndexByte(rest, '\n') + 1
		if n == 0 {
			n = len(rest)
		}
		if masked, found := MaskText(string(rest[:n])); found {
			if out == nil {
				out = append(make([]byte, 0, len(b)+64), b[:at]...)
			}
			out = append(out, masked...)
		} else if out != nil {
			out = append(out, rest[:n]...)
		}
		rest, at = rest[n:], at+n
	}
	if out == nil {
		return b
	}
	return out
}

// ansiEscape is a terminal escape sequence (CSI, such as a colour; OSC; or a lone ESC
// and the byte after it): a job log's viewer renders them, so a token split by one
// reads whole there.
var ansiEscape = regexp.MustCompile("\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\x07\x1b]*(?:\x07|\x1b\\\\)?|.?)")

// stripHidden drops hidden characters (a zero-width space inside a token) and terminal
// escape sequences.
func stripHidden(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7F
	}
	if plain {
		// Printable ASCII holds no hidden character: most lines are.
		return s
	}
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansiEscape.ReplaceAllString(s, "")
	}
	return strings.Map(func(r rune) rune {
		if hiddenchar.Is(r) {
			return -1
		}
		return r
	}, s)
}

// scanSecrets runs the secrets gate over the added lines, the file names, the commit
// messages and the texts. It returns the findings and the secrets found, each once.
func scanSecrets(in Input, action Action) ([]Finding, []string) {
	var out []Finding
	var secrets []string
	seen := map[string]bool{}
	add := func(file string, line int, h secretHit, how string) {
		key := fmt.Sprintf("%s\x00%d\x00%s", file, line, h.secret)
		if seen[key] {
			return
		}
		seen[key] = true
		if !seen["\x00"+h.secret] {
			seen["\x00"+h.secret] = true
			secrets = append(secrets, h.secret)
		}
		out = append(out, Finding{Gate: GateSecrets, File: file, Line: line, Action: action,
			Message: fmt.Sprintf("%s %s%s", h.kind, Mask(h.secret), how)})
	}
	for _, f := range in.Files {
		for _, n := range []string{f.Path, f.OldPath} {
			for _, h := range findSecrets(stripHidden(n), false) {
				add(f.Path, 0, h, " in the file's name")
			}
		}
		scanLines(f.Path, f.Added, add)
	}
	for _, c := range in.Commits {
		scanLines("commit message "+shortSHA(c.SHA), textLines(c.Message), add)
	}
	for _, t := range in.Texts {
		scanLines(t.Name, textLines(t.Body), add)
	}
	return out, secrets
}

// MaskFound is data with each of secrets (Result.Secrets) masked (Mask), and whether
// it held any: for the files a run keeps beside its evidence (the agent's transcript,
// its ledger), which may quote what the gate found in the diff.
func MaskFound(data []byte, secrets []string) ([]byte, bool) {
	found := false
	for _, s := range secrets {
		if s != "" && bytes.Contains(data, []byte(s)) {
			data, found = bytes.ReplaceAll(data, []byte(s), []byte(Mask(s))), true
		}
	}
	return data, found
}

// scanLines scans each line, then each run of consecutive lines joined with what
// separates pieces of a string in code (quotes, +, blanks, backslashes) dropped: a token
// split across lines.
func scanLines(file string, lines []Line, add func(string, int, secretHit, string)) {
	for _, l := range lines {
		for _, h := range findSecrets(stripHidden(l.Text), false) {
			add(file, l.N, h, "")
		}
	}
	for i := 0; i < len(lines); {
		j := i + 1
		for j < len(lines) && lines[j].N == lines[j-1].N+1 {
			j++
		}
		if j-i > 1 {
			joinRun(file, lines[i:j], add)
		}
		i = j
	}
}

// joinRun scans lines joined; a hit found only so is reported at the line it starts on.
func joinRun(file string, lines []Line, add func(string, int, secretHit, string)) {
	var b strings.Builder
	starts := make([]int, len(lines))
	for k, l := range lines {
		starts[k] = b.Len()
		b.WriteString(strings.Map(func(r rune) rune {
			if r == '"' || r == '\'' || r == '`' || r == '+' || r == '\\' || r == ' ' || r == '\t' || r == ',' || r >= 0x7F && hiddenchar.Is(r) || r < 0x20 {
				return -1
			}
			return r
		}, l.Text))
	}
	for _, h := range findSecrets(b.String(), true) {
		k := 0
		for k+1 < len(starts) && starts[k+1] <= h.at {
			k++
		}
		// Within one line, the line's own scan has it already.
		if k+1 < len(starts) && h.at+len(h.secret) <= starts[k+1] {
			continue
		}
		add(file, lines[k].N, h, " (split across lines)")
	}
}

// textLines numbers the lines of a text.
func textLines(s string) []Line {
	parts := strings.Split(s, "\n")
	out := make([]Line, len(parts))
	for i, p := range parts {
		out[i] = Line{N: i + 1, Text: p}
	}
	return out
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
