package gitserver

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		raw  string
		want endpoint
		ok   bool
	}{
		{raw: "/acme/widgets.git/info/refs?service=git-upload-pack", want: endpoint{owner: "acme", repo: "widgets", service: serviceUpload, infoRefs: true}, ok: true},
		{raw: "/acme/widgets.git/info/refs?service=git-receive-pack", want: endpoint{owner: "acme", repo: "widgets", service: serviceReceive, infoRefs: true}, ok: true},
		{raw: "/acme/.github.git/git-upload-pack", want: endpoint{owner: "acme", repo: ".github", service: serviceUpload}, ok: true},
		{raw: "/acme/widgets.git/git-receive-pack", want: endpoint{owner: "acme", repo: "widgets", service: serviceReceive}, ok: true},
		{raw: "/acme/widgets.git/git-receive-pack?x=1"},
		{raw: "/acme/widgets.git/info/refs?service=git-upload-pack&service=git-receive-pack"},
		{raw: "/acme/widgets.git/"},
		{raw: "/acme/widgets.git"},
		{raw: "/acme//widgets.git/git-upload-pack"},
		{raw: "//acme/widgets.git/git-upload-pack"},
		{raw: "/acme/../widgets.git/git-upload-pack"},
		{raw: "/acme/..git/git-upload-pack"},
		{raw: "/acme/.git/git-upload-pack"},
		{raw: "/-acme/widgets.git/git-upload-pack"},
		{raw: "/acme/wid gets.git/git-upload-pack"},
		{raw: "/acme/widgets.git/git-upload-pack/"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			u, err := url.Parse(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := parseEndpoint(u)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("parseEndpoint = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func FuzzParseEndpoint(f *testing.F) {
	f.Add("/acme/widgets.git/info/refs?service=git-upload-pack")
	f.Add("/acme/widgets.git/git-receive-pack")
	f.Add("/a/b/c.git/info/refs")
	f.Add("/acme/%2e%2e.git/git-upload-pack")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		ep, ok := parseEndpoint(u)
		if !ok {
			return
		}
		if checkOwner(ep.owner) != nil || checkRepo(ep.repo) != nil {
			t.Fatalf("accepted bad names %q/%q from %q", ep.owner, ep.repo, raw)
		}
		if strings.Contains(ep.owner+ep.repo, "/") || ep.repo == "." || ep.repo == ".." {
			t.Fatalf("accepted a path-like name from %q", raw)
		}
		if ep.service != serviceUpload && ep.service != serviceReceive {
			t.Fatalf("accepted service %q", ep.service)
		}
	})
}

func TestCheckPath(t *testing.T) {
	for _, p := range []string{"a", "a/b.txt", ".github/bumper.yml", "dir/.gitignore"} {
		if err := checkPath(p); err != nil {
			t.Errorf("checkPath(%q) = %v, want ok", p, err)
		}
	}
	for _, p := range []string{"", "/a", "a/", "a//b", "./a", "a/../b", ".git/config", "a/.GIT/x", "a\x00b", "a\nb", "a\\b"} {
		if err := checkPath(p); err == nil {
			t.Errorf("checkPath(%q) accepted", p)
		}
	}
}
