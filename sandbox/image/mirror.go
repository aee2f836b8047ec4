package image

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// hostMirror finds the Debian mirror the host's apt uses for suite, from
// aptDir/sources.list and aptDir/sources.list.d (one-line .list and deb822 .sources).
func hostMirror(suite, aptDir string) (string, error) {
	files := []string{filepath.Join(aptDir, "sources.list")}
	for _, pat := range []string{"*.list", "*.sources"} {
		m, err := filepath.Glob(filepath.Join(aptDir, "sources.list.d", pat))
		if err != nil {
			return "", fmt.Errorf("failed to list apt sources: %w", err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("failed to read apt sources: %w", err)
		}
		var uri string
		if strings.HasSuffix(f, ".sources") {
			uri = mirrorFromDeb822(string(raw), suite)
		} else {
			uri = mirrorFromOneLine(string(raw), suite)
		}
		if uri != "" {
			return strings.TrimSuffix(uri, "/"), nil
		}
	}
	return "", fmt.Errorf("failed to find a Debian mirror for suite %s in %s/sources.list*; pass one explicitly (for example --mirror http://deb.debian.org/debian)", suite, aptDir)
}

// mirrorFromOneLine reads "deb [options] URI suite component..." lines.
func mirrorFromOneLine(text, suite string) string {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) == 0 {
				continue
			}
			f = f[1:]
		}
		if len(f) >= 2 && f[1] == suite && slices.Contains(f[2:], "main") {
			return f[0]
		}
	}
	return ""
}

// mirrorFromDeb822 reads deb822 stanzas (Types, URIs, Suites, Components).
func mirrorFromDeb822(text, suite string) string {
	for _, stanza := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, " ") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		if strings.EqualFold(fields["enabled"], "no") ||
			!slices.Contains(strings.Fields(fields["types"]), "deb") ||
			!slices.Contains(strings.Fields(fields["suites"]), suite) ||
			!slices.Contains(strings.Fields(fields["components"]), "main") {
			continue
		}
		if uris := strings.Fields(fields["uris"]); len(uris) > 0 {
			return uris[0]
		}
	}
	return ""
}
