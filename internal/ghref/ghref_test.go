package ghref

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/hiddenchar"
	"golang.org/x/text/unicode/norm"
)

// live finds what GitHub would act on, written from GitHub's documentation and its
// html-pipeline's mention pattern, independently of Neutralize: a '#' or "GH-" touching
// a number, an '@' after a non-word character touching a login, a URL scheme or "www.".
// It reads the text after compatibility folding (NFKC), so a look-alike left live counts.
var live = []*regexp.Regexp{
	regexp.MustCompile(`#[0-9]`),
	regexp.MustCompile(`(?i)gh-[0-9]`),
	regexp.MustCompile(`(?:^|[^A-Za-z0-9_])@[A-Za-z0-9]`),
	regexp.MustCompile(`(?i)https?://`),
	regexp.MustCompile(`(?i)www\.`),
}

func liveIn(s string) []string {
	var found []string
	folded := norm.NFKC.String(s)
	for _, re := range live {
		found = append(found, re.FindAllString(folded, -1)...)
	}
	return found
}

// TestNeutralize is the attacker's texts: what an agent writes in a commit message or
// an issue's author in its title to close, cross-reference or notify.
func TestNeutralize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"the issue's commit message", "Fixes #6, closes #7 @maintainer see #1\n\n![x](https://outside/x.png)",
			"Fixes # 6, closes # 7 @ maintainer see # 1\n\n![x](hxxps://outside/x.png)"},
		{"a title that closes", "Fixes #7: crash", "Fixes # 7: crash"},
		{"keywords in every case, with colons", "CLOSES: #3 fixed:#4 Resolve #5", "CLOSES: # 3 fixed:# 4 Resolve # 5"},
		{"another repository's issue", "closes acme/widgets#12 and other-org/tool#3", "closes acme/widgets# 12 and other-org/tool# 3"},
		{"GH- references", "fixes GH-12, gh-13 and Gh-14", "fixes GH- 12, gh- 13 and Gh- 14"},
		{"issue and pull request URLs", "Fixes https://github.com/acme/widgets/issues/6 and HTTP://github.com/acme/widgets/pull/7",
			"Fixes hxxps://github.com/acme/widgets/issues/6 and HxxP://github.com/acme/widgets/pull/7"},
		{"a www link", "see www.github.com/acme/widgets/issues/6", "see www[.]github.com/acme/widgets/issues/6"},
		{"a mention at a line's start", "@maintainer please merge\n@acme/owners too", "@ maintainer please merge\n@ acme/owners too"},
		{"mentions after punctuation", "(@a) [@b] \"@c\" x.@d y-@e", "(@ a) [@ b] \"@ c\" x.@ d y-@ e"},
		{"emails are not mentions", "maintainer@example.test and a_b@c.d", "maintainer@example.test and a_b@c.d"},
		{"a mention after a letter of another script", "é@maintainer", "é@ maintainer"},
		{"fullwidth look-alikes", "Fixes ＃7 ＠maintainer", "Fixes # 7 @ maintainer"},
		{"small and mathematical look-alikes", "closes ﹟𝟕 and #７ and #⒎", "closes # 𝟕 and # ７ and # ⒎"},
		{"a fullwidth scheme", "ｈｔｔｐｓ://outside", "ｈxxｐｓ://outside"},
		{"a digit of another script", "fixes #٧", "fixes # ٧"},
		{"a numeric character reference", "fixes &#35;7 for &#64;maintainer", "fixes &# 35;7 for &# 64;maintainer"},
		{"hidden characters shown", "Fixes\u200b #7\u202e", "Fixes[U+200B] # 7[U+202E]"},
		{"a zero-width joiner between '#' and the number", "#\u200d7", "#[U+200D]7"},
		{"a commit id and its repository are left alone", "acme/widgets@1234567", "acme/widgets@1234567"},
		{"plain text unchanged", "Count widgets from the config (issue 12)", "Count widgets from the config (issue 12)"},
		{"invalid UTF-8", "fix \xff#1", "fix \uFFFD# 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Neutralize(tt.in)
			if got != tt.want {
				t.Errorf("Neutralize(%q)\n = %q\nwant %q", tt.in, got, tt.want)
			}
			if l := liveIn(got); len(l) > 0 {
				t.Errorf("live in %q: %q", got, l)
			}
			if again := Neutralize(got); again != got {
				t.Errorf("not idempotent: %q then %q", got, again)
			}
		})
	}
}

// FuzzNeutralize: whatever the text, nothing live is left, nothing hidden, the text is
// valid UTF-8, and neutralizing again changes nothing.
func FuzzNeutralize(f *testing.F) {
	for _, s := range []string{"Fixes #6, closes #7 @maintainer see #1", "GH-1 https://x www.y ＠z ＃8", "a@b #\u200b1", "hhttps://", "wwww.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Neutralize(s)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if l := liveIn(got); len(l) > 0 {
			t.Fatalf("Neutralize(%q) = %q: live %q", s, got, l)
		}
		if strings.IndexFunc(got, hiddenchar.Is) >= 0 {
			t.Fatalf("Neutralize(%q) = %q: a hidden character", s, got)
		}
		if again := Neutralize(got); again != got {
			t.Fatalf("not idempotent: %q, then %q", got, again)
		}
	})
}
