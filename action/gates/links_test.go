package gates

import (
	"testing"
)

// TestLinks: images and links in added Markdown and HTML, and in what Bumper posts, to
// hosts off the allowlist; the ways an agent would dress one up.
func TestLinks(t *testing.T) {
	tests := []struct {
		name, file, text, want string
	}{
		{"a Markdown image", "README.md", "![x](https://outside.example/?d=abc)", "adds an image to outside.example, a host not on the allowlist"},
		{"a Markdown link", "docs/a.md", "see [here](http://outside.example/a)", "adds a link to outside.example, a host not on the allowlist"},
		{"an HTML image", "docs/index.html", `<img src="https://outside.example/p.png">`, "adds an image to outside.example, a host not on the allowlist"},
		{"scheme-relative", "README.md", `<img src="//outside.example/p.png">`, "adds an image to outside.example, a host not on the allowlist"},
		{"upper case and a trailing dot", "README.md", "![x](HTTPS://Outside.Example./x)", "adds an image to outside.example, a host not on the allowlist"},
		{"user info naming an allowed host", "README.md", "![x](https://github.com@outside.example/x)", "adds an image to outside.example, a host not on the allowlist"},
		{"HTML entities", "README.md", `<img src="&#x68;ttps://outside.example/x">`, "adds an image to outside.example, a host not on the allowlist"},
		{"backslashes", "README.md", `![x](https:\\outside.example\x)`, "adds an image to outside.example, a host not on the allowlist"},
		{"a reference definition", "README.md", "[logo]: https://outside.example/l.png", "adds a link to outside.example, a host not on the allowlist"},
		{"an allowed host", "README.md", "![x](https://img.shields.io/badge/x)", ""},
		{"GitHub", "README.md", "[issue](https://github.com/o/r/issues/1)", ""},
		{"a relative link", "README.md", "![x](docs/img/arch.png)", ""},
		{"not Markdown", "main.go", `const u = "https://outside.example"`, ""},
	}
	cfg := Config{Allowlist: []string{"*.shields.io"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outboundLinks(Input{Files: []File{{Path: tt.file, Added: []Line{{N: 3, Text: tt.text}}}}}, cfg)
			if tt.want == "" {
				if len(got) > 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Message != tt.want || got[0].Line != 3 || got[0].Action != ActionReview {
				t.Fatalf("findings %+v, want one at line 3: %q", got, tt.want)
			}
		})
	}
	// A reply is Markdown on GitHub, and GitHub's image proxy fetches what it shows.
	got := outboundLinks(Input{Texts: []Text{{Name: "replies.json", Body: `[{"body": "done ![](https://outside.example/?d=x)"}]`}}}, cfg)
	if len(got) != 1 || got[0].File != "replies.json" {
		t.Fatalf("an image in a reply: findings %+v", got)
	}
}
