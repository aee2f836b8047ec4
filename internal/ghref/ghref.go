// Package ghref neutralizes what GitHub acts on in text Bumper publishes but did not
// write (commit messages, an issue's title made a pull request's title or a commit's
// message): issue and pull request references, which GitHub turns into cross-references
// on the issues they name and which, after a closing keyword, close those issues when
// the text lands on the default branch; @mentions, which notify; URLs. The text stays
// readable: a visible space goes where GitHub's grammar needs two characters to touch.
//
// GitHub recognizes (docs.github.com, "Autolinked references and URLs", "Linking a pull
// request to an issue", and the mention grammar of its html-pipeline):
//
//	#26, owner/repo#26     '#' immediately followed by the number
//	GH-26                  "GH-" (any case) immediately followed by the number
//	https://host/o/r/issues/26, www.…   a URL
//	@login, @org/team      '@' after a non-word character, immediately followed by the login
//	Fixes #26              a closing keyword, an optional colon, space, then one of the
//	                       references above
//
// Neutralize writes "# 26", "GH- 26", "@ login", "hxxps://…" and "www[.]…": none of them
// is a reference, a mention or a URL in that grammar, so a closing keyword before them
// closes nothing and is left as it is (plain words). Look-alike characters that Unicode
// compatibility folds to '#', '@', '-', digits or letters (fullwidth, small forms,
// mathematical digits) are treated as the ASCII ones, and any Unicode digit as a digit,
// so no spelling GitHub might fold one day is left live. Characters a reader cannot see
// (controls but newline and tab, format characters such as zero-width and
// bidirectional controls, variation selectors, line separators) are written as
// [U+XXXX], so what a person reads is what GitHub parses. An email address
// (name@example.com: '@' after a letter or digit) is not a mention and stays as it is.
package ghref

import (
	"strings"
	"unicode"

	"github.com/bumperdev/bumper/internal/hiddenchar"
	"golang.org/x/text/unicode/norm"
)

// Neutralize returns s with every GitHub reference, mention and URL made inert and
// hidden characters made visible, as the package says. A look-alike character that had
// to change is written as the ASCII it folds to ('＃7' becomes "# 7"). Neutralize is
// idempotent: neutralized text comes back unchanged. Invalid UTF-8 becomes U+FFFD.
func Neutralize(s string) string {
	marked, _ := hiddenchar.Mark(strings.ToValidUTF8(s, "\uFFFD"))
	rs := []rune(marked)
	// xs is the text as a grammar that folds Unicode could read it: each rune's
	// compatibility decomposition; from[k] is the rune xs[k] comes from.
	var xs []rune
	var from []int
	for i, r := range rs {
		for _, e := range expand(r) {
			xs, from = append(xs, e), append(from, i)
		}
	}
	at := func(k int) rune {
		if k < 0 || k >= len(xs) {
			return 0
		}
		return xs[k]
	}
	digit := func(k int) bool { r := at(k); return '0' <= r && r <= '9' || unicode.IsDigit(r) }
	// subst is what to write instead of xs[k].
	subst := map[int]string{}
	for k := range xs {
		switch c := lower(xs[k]); {
		case c == '#' && digit(k+1):
			// #26, owner/repo#26, and &#35; (a numeric character reference).
			subst[k] = "# "
		case c == '-' && digit(k+1) && lower(at(k-1)) == 'h' && lower(at(k-2)) == 'g':
			subst[k] = "- "
		case c == '@' && isASCIIAlnum(at(k+1)) && !wordBefore(rs, from[k]):
			subst[k] = "@ "
		case c == 'h' && (hasPrefixFold(xs[k:], "http://") || hasPrefixFold(xs[k:], "https://")):
			// Wherever it starts: what GitHub's autolinker takes for a scheme's start is
			// its business, and "hxxp" reads the same after any letter.
			subst[k+1], subst[k+2] = "x", "x"
		case c == 'w' && hasPrefixFold(xs[k:], "www."):
			subst[k+3] = "[.]"
		}
	}
	if len(subst) == 0 {
		return string(rs)
	}
	// A rune with a substitution in its decomposition is written as the decomposition;
	// the others as they are.
	changed := map[int]bool{}
	for k := range subst {
		changed[from[k]] = true
	}
	var b strings.Builder
	b.Grow(len(s) + 2*len(subst))
	for k := 0; k < len(xs); k++ {
		switch v, ok := subst[k]; {
		case ok:
			b.WriteString(v)
		case changed[from[k]]:
			b.WriteRune(xs[k])
		case k == 0 || from[k-1] != from[k]:
			b.WriteRune(rs[from[k]])
		}
	}
	return b.String()
}

// hasPrefixFold: xs starts with prefix (ASCII), letters in any case.
func hasPrefixFold(xs []rune, prefix string) bool {
	if len(xs) < len(prefix) {
		return false
	}
	for j := range len(prefix) {
		if lower(xs[j]) != rune(prefix[j]) {
			return false
		}
	}
	return true
}

// expand is r's compatibility decomposition (fullwidth '＃' is "#", '𝟕' is "7", '⒎'
// is "7."): what a grammar that folds Unicode could read in its place.
func expand(r rune) []rune {
	if r < 0x80 {
		return []rune{r}
	}
	if e := []rune(norm.NFKC.String(string(r))); len(e) > 0 {
		return e
	}
	return []rune{r}
}

func lower(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + ('a' - 'A')
	}
	return r
}

func isASCIIAlnum(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

// wordBefore: the rune before rs[i] is an ASCII word character, as it is to GitHub's
// mention grammar ("\w" in Ruby's regular expressions is ASCII): only then is an '@'
// not a mention (an email address). Anything else before an '@', a letter of another
// script included, leaves it a mention.
func wordBefore(rs []rune, i int) bool {
	return i > 0 && (isASCIIAlnum(rs[i-1]) || rs[i-1] == '_')
}
