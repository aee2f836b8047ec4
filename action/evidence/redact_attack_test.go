package evidence_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
)

// TestTokensAfterAWordCharacterAreRedacted: the patterns start with \b, so a token right after a
// letter, digit or underscore is not redacted. That is how tokens are written in the
// text a run quotes every day: URL-encoded (a query "access_token%3Dghs_…", a logged
// header "Authorization%3A%20Bearer%20ghs_…"), JSON- or Go-escaped ("\nghp_…", as a
// test prints a quoted string), glued to a prefix ("TOKEN_ghp_…"). Each leaves a whole
// token-shaped string in evidence.json and in the pull request's body (evidencemd uses
// the same patterns), which GitHub's own secret scanning and anyone reading the pull
// request take for one.
func TestTokensAfterAWordCharacterAreRedacted(t *testing.T) {
	ghs := "ghs_" + strings.Repeat("Mn5", 12)
	ghp := "ghp_" + strings.Repeat("aB3", 12)
	ant := "sk-ant-api03-" + strings.Repeat("Xy7", 12)
	texts := map[string]string{
		"a URL-encoded query":          "GET /repos?access_token%3D" + ghs + " 401",
		"a URL-encoded bearer header":  "Authorization%3A%20Bearer%20" + ghs,
		"an escaped newline before it": `got "token:\n` + ghp + `", want ""`,
		"an underscore prefix":         "TOKEN_" + ghp,
		"an Anthropic key URL-encoded": "x-api-key%3A" + ant,
	}
	// token finds what the bundle must not carry, wherever it starts.
	token := regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{20,}|sk-ant-[A-Za-z0-9_-]{16,}`)
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			e := evidencetest.Realistic()
			e.Ledger.Decisions[0].Choice = text
			e.Tests[0].Failures[0].Excerpt = text
			if _, err := e.Redact(); err != nil {
				t.Fatal(err)
			}
			data, err := e.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			md, _ := evidencemd.Render(e, evidencemd.CommentLimit)
			if m := token.FindString(string(data)); m != "" {
				t.Errorf("evidence.json still carries %.16s… after Redact (from %q)", m, text)
			}
			if m := token.FindString(md); m != "" {
				t.Errorf("the pull request's body still carries %.16s…", m)
			}
			if got := evidence.RedactText(text); token.MatchString(got) {
				t.Errorf("RedactText(%q) = %q: the run's reason would carry it", text, got)
			}
		})
	}
}
