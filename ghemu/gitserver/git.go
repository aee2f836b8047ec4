package gitserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Signature is the author or committer of a commit.
type Signature struct {
	Name  string
	Email string
	// When is the commit time; the zero time means now.
	When time.Time
}

func (sig Signature) check(role string) error {
	for _, v := range []string{sig.Name, sig.Email} {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("%w: %s needs a name and an email", ErrInvalidName, role)
		}
		if strings.ContainsAny(v, "<>\n\x00") {
			return fmt.Errorf("%w: %s %q must not contain '<', '>', a newline or NUL", ErrInvalidName, role, v)
		}
	}
	return nil
}

// env renders the signature for git commit-tree, which takes identities from the
// environment only. commitTree has replaced a zero When by then.
func (sig Signature) env(role string) []string {
	return []string{
		"GIT_" + role + "_NAME=" + sig.Name,
		"GIT_" + role + "_EMAIL=" + sig.Email,
		"GIT_" + role + "_DATE=" + fmt.Sprintf("%d %s", sig.When.Unix(), sig.When.Format("-0700")),
	}
}

// gitError is a git command that exited with an error.
type gitError struct {
	args   []string
	code   int
	stderr string
	err    error
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, e.stderr)
}

func (e *gitError) Unwrap() error { return e.err }

// exitCode returns the exit status of a failed git command, or -1 when err is not one.
func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.code
	}
	return -1
}

// run runs git on the bare repository dir with a fixed environment: no system or user
// configuration (the machine's settings must not change what the emulator does),
// literal pathspecs, no prompts. It never goes through a shell.
func (s *Server) run(ctx context.Context, dir string, stdin []byte, env []string, args ...string) ([]byte, error) {
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	return s.runReader(ctx, dir, in, env, args...)
}

// runReader is run with standard input read from a reader (nil: none).
func (s *Server) runReader(ctx context.Context, dir string, stdin io.Reader, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.gitPath, append([]string{"--git-dir=" + dir}, args...)...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + s.root,
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_LITERAL_PATHSPECS=1",
	}, env...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return stdout.Bytes(), &gitError{args: args, code: code, stderr: strings.TrimSpace(stderr.String()), err: err}
	}
	return stdout.Bytes(), nil
}

// runLine is run for commands that print one value.
func (s *Server) runLine(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := s.run(ctx, dir, nil, nil, args...)
	return strings.TrimSpace(string(out)), err
}
