package gates

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestSecretsCorpus: every positive of testdata/secrets.txt is found as its kind and
// masked; no negative is found.
func TestSecretsCorpus(t *testing.T) {
	f, err := os.Open("testdata/secrets.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		head, text, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("corpus line %q has no tab", line)
		}
		n++
		kind := strings.TrimSpace(strings.TrimPrefix(head, "+"))
		t.Run(text[:min(len(text), 40)], func(t *testing.T) {
			in := Input{Files: []File{{Path: "config/app.env", Status: StatusAdded, Added: []Line{{N: 7, Text: text}}}}}
			got, _ := scanSecrets(in, ActionBlock)
			if strings.HasPrefix(head, "-") {
				if len(got) > 0 {
					t.Fatalf("a negative was found: %+v", got)
				}
				return
			}
			if len(got) == 0 {
				t.Fatalf("the %s was not found", kind)
			}
			kinds := []string{}
			for _, g := range got {
				kinds = append(kinds, g.Message)
				if g.Line != 7 || g.File != "config/app.env" || g.Action != ActionBlock || g.Gate != GateSecrets {
					t.Errorf("finding %+v: want config/app.env:7, block", g)
				}
			}
			if !strings.HasPrefix(got[0].Message, kind+" ") {
				t.Errorf("found %q, want the kind %q first", kinds, kind)
			}
			assertMasked(t, text, got)
		})
	}
	if n < 50 {
		t.Fatalf("the corpus has %d lines; it lost some", n)
	}
}

// assertMasked fails when a finding quotes more of a secret-looking run of text than its
// first four characters.
func assertMasked(t *testing.T, text string, fs []Finding) {
	t.Helper()
	for _, g := range fs {
		for _, word := range strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune(" \"'=:,;{}()", r) }) {
			if len(word) >= 16 && strings.Contains(g.Message, word[4:]) {
				t.Errorf("the finding %q quotes %q", g.Message, word)
			}
		}
	}
}

// TestSecretsEvasions: what an agent would try to get a token past the gate.
func TestSecretsEvasions(t *testing.T) {
	tok := "ghp_" + strings.Repeat("aB3dE6gH9k", 3) + "Lm2No5"
	b64 := base64.StdEncoding.EncodeToString([]byte(tok))
	tests := []struct {
		name string
		in   Input
		want string // file:line of the finding
	}{
		{"plain in a file", Input{Files: []File{{Path: "main.go", Added: []Line{{N: 3, Text: `var t = "` + tok + `"`}}}}}, "main.go:3"},
		{"split across lines with +", Input{Files: []File{{Path: "main.go", Added: []Line{
			{N: 10, Text: `var t = "` + tok[:14] + `" +`}, {N: 11, Text: `	"` + tok[14:] + `"`}}}}}, "main.go:10"},
		{"split across lines in a shell script", Input{Files: []File{{Path: "x.sh", Added: []Line{
			{N: 1, Text: `T=` + tok[:20] + `\`}, {N: 2, Text: tok[20:]}}}}}, "x.sh:1"},
		{"base64", Input{Files: []File{{Path: "fixtures/blob.txt", Added: []Line{{N: 2, Text: b64}}}}}, "fixtures/blob.txt:2"},
		{"split by a zero-width space", Input{Files: []File{{Path: "README.md", Added: []Line{{N: 4, Text: tok[:10] + "\u200b" + tok[10:]}}}}}, "README.md:4"},
		{"in a commit message", Input{Commits: []Commit{{SHA: "0123456789abcdef0123", Message: "Fix the client\n\nUse " + tok + " for now"}}}, "commit message 0123456789ab:3"},
		{"in the decision ledger", Input{Texts: []Text{{Name: "decisions.json", Body: `{"decisions":[{"summary":"used ` + tok + `"}]}`}}}, "decisions.json:1"},
		{"in a reply", Input{Texts: []Text{{Name: "replies.json", Body: "[\n{\"body\": \"the token is " + tok + "\"}]"}}}, "replies.json:2"},
		{"in a file's name", Input{Files: []File{{Path: "keys/" + tok + ".txt", Status: StatusAdded}}}, "keys/ghp_******** (40 characters).txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(t.Context(), tt.in, Config{}).Findings
			if len(got) == 0 {
				t.Fatal("the token got through")
			}
			if got[0].Where() != tt.want {
				t.Errorf("found at %s, want %s", got[0].Where(), tt.want)
			}
			for _, g := range got {
				if strings.Contains(g.Message+g.File, tok[4:12]) || strings.Contains(g.Message+g.File, b64[8:]) {
					t.Errorf("the finding quotes the token: %q", g.Message)
				}
			}
		})
	}
}

func TestMask(t *testing.T) {
	if got := Mask("ghp_abcdefghijklmnopqrstuvwxyz0123456789"); got != "ghp_******** (40 characters)" {
		t.Errorf("Mask = %q", got)
	}
	if got := Mask("short-secret"); strings.Contains(got, "short") {
		t.Errorf("Mask of a short secret quotes it: %q", got)
	}
}

// TestBase64RunsAsTheExpression: the one-pass scan finds what the expression it stands
// for finds, on random text made of base64's characters, padding and separators.
func TestBase64RunsAsTheExpression(t *testing.T) {
	re := regexp.MustCompile(`[A-Za-z0-9+/_-]{28,}={0,2}`)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "aZ09+/_-====  .:\n\"'é"
	for i := range 5000 {
		var b strings.Builder
		for range rng.IntN(200) {
			if rng.IntN(4) == 0 {
				b.WriteString(strings.Repeat("Qx9", rng.IntN(15)))
			}
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		var want [][2]int
		for _, m := range re.FindAllStringIndex(s, -1) {
			want = append(want, [2]int{m[0], m[1]})
		}
		if got := base64Runs(s); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("case %d %q: base64Runs %v, the expression %v", i, s, got, want)
		}
	}
}
