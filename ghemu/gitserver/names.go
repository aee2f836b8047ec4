package gitserver

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/internal/pktline"
)

// checkOwner applies GitHub's login rules: 1 to 39 letters, digits and hyphens, not
// starting or ending with a hyphen.
func checkOwner(owner string) error {
	if len(owner) == 0 || len(owner) > 39 {
		return fmt.Errorf("%w: owner %q must be 1 to 39 characters", ErrInvalidName, owner)
	}
	for i := 0; i < len(owner); i++ {
		c := owner[i]
		if !isAlnum(c) && c != '-' {
			return fmt.Errorf("%w: owner %q may hold only letters, digits and hyphens", ErrInvalidName, owner)
		}
	}
	if owner[0] == '-' || owner[len(owner)-1] == '-' {
		return fmt.Errorf("%w: owner %q must not start or end with a hyphen", ErrInvalidName, owner)
	}
	return nil
}

// checkRepo applies GitHub's repository-name rules: up to 100 letters, digits, '.', '-'
// and '_', not "." or "..". A name ending in ".git" is refused because the URL
// /{owner}/{repo}.git could not tell it apart.
func checkRepo(repo string) error {
	if len(repo) == 0 || len(repo) > 100 {
		return fmt.Errorf("%w: repository %q must be 1 to 100 characters", ErrInvalidName, repo)
	}
	for i := 0; i < len(repo); i++ {
		c := repo[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return fmt.Errorf("%w: repository %q may hold only letters, digits, '.', '-' and '_'", ErrInvalidName, repo)
		}
	}
	if repo == "." || repo == ".." {
		return fmt.Errorf("%w: repository name %q is reserved", ErrInvalidName, repo)
	}
	if strings.HasSuffix(strings.ToLower(repo), ".git") {
		return fmt.Errorf("%w: repository %q must not end in .git", ErrInvalidName, repo)
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// checkBranch checks a short branch name ("main", "bumper/12-1"). Like git branch, it
// refuses a leading '-', which would read as an option.
func checkBranch(branch string) error {
	if strings.HasPrefix(branch, "-") {
		return fmt.Errorf("%w: branch %q must not start with '-'", ErrInvalidName, branch)
	}
	if err := pktline.CheckRefName("refs/heads/" + branch); err != nil {
		return fmt.Errorf("%w: branch %q: %w", ErrInvalidName, branch, err)
	}
	return nil
}

// checkRef checks a full ref name ("refs/heads/main").
func checkRef(ref string) error {
	if err := pktline.CheckRefName(ref); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidName, err)
	}
	return nil
}

// checkOID checks a full object name.
func checkOID(what, oid string) error {
	if err := pktline.CheckOID(oid); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidName, what, err)
	}
	return nil
}

// checkPath checks a file path inside a repository as the contents API takes it:
// relative, slash-separated, no empty, "." or ".." components, no ".git" component, no
// control characters.
func checkPath(path string) error {
	if path == "" || len(path) > 4096 {
		return fmt.Errorf("%w: path must be 1 to 4096 bytes", ErrInvalidName)
	}
	for i := 0; i < len(path); i++ {
		if path[i] < 0x20 || path[i] == 0x7f || path[i] == '\\' {
			return fmt.Errorf("%w: path %q contains a control character or backslash", ErrInvalidName, path)
		}
	}
	for _, part := range strings.Split(path, "/") {
		switch {
		case part == "":
			return fmt.Errorf("%w: path %q has an empty component (leading, trailing or double slash)", ErrInvalidName, path)
		case part == "." || part == "..":
			return fmt.Errorf("%w: path %q has a %q component", ErrInvalidName, path, part)
		case strings.EqualFold(part, ".git"):
			return fmt.Errorf("%w: path %q has a .git component", ErrInvalidName, path)
		}
	}
	return nil
}
