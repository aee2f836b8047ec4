package harness

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// localExec runs a harness's command line with this machine's /bin/sh, as the VM's
// session would run it, except that the paths the harness names (/workspace/…, /out)
// are moved under root. The wrapper script is run for real, not read.
func localExec(root string) Exec {
	return func(ctx context.Context, argv, env []string, stdout, stderr io.Writer, in ...Input) (ExitStatus, error) {
		moved := []string{"PATH=/usr/bin:/bin", "HOME=" + root, "LC_ALL=C"}
		for _, e := range env {
			k, v, _ := strings.Cut(e, "=")
			if k != envFeedback && (strings.HasPrefix(v, "/workspace") || strings.HasPrefix(v, "/out")) {
				v = root + v
			}
			moved = append(moved, k+"="+v)
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = filepath.Join(root, "workspace", "repo")
		cmd.Env = moved
		cmd.Stdout, cmd.Stderr = stdout, stderr
		err := runLocal(cmd, root, in)
		var exitErr *exec.ExitError
		switch {
		case err == nil:
			return ExitStatus{}, nil
		case errors.As(err, &exitErr):
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return ExitStatus{Code: -1, Signal: ws.Signal().String()}, nil
			}
			return ExitStatus{Code: exitErr.ExitCode()}, nil
		default:
			return ExitStatus{Code: -1, Error: err.Error()}, nil
		}
	}
}

// vm lays out the directories the VM has, under a temporary root.
func vm(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this machine")
	}
	root := t.TempDir()
	for _, d := range []string{"workspace/repo", "workspace/task", "out"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// seer is a program that records what it saw: its round, working directory,
// environment and the feedback file.
const seer = `printf '::bumper-event::{"kind":"turn","turn":1}\n'
printf '%s' "$BUMPER_ROUND" > "$BUMPER_OUT/round"
pwd > "$BUMPER_OUT/pwd"
env > "$BUMPER_OUT/env"
if [ -n "$BUMPER_FEEDBACK_FILE" ]; then cp "$BUMPER_FEEDBACK_FILE" "$BUMPER_OUT/feedback"; fi
`

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWrapperWritesFeedback runs the wrapper with /bin/sh: the program starts in the
// repository with its round, the feedback file holds exactly the feedback, and the
// feedback is not left in the program's environment.
func TestWrapperWritesFeedback(t *testing.T) {
	tests := []struct {
		name     string
		round    int
		feedback string
	}{
		{"round 1", 1, ""},
		{"round 2", 2, "## Verification round 1: failed\n\n```text\n--- FAIL: TestX\n```\n"},
		{"round 3, empty feedback", 3, ""},
		{"no trailing newline, leading dash", 2, "-n -e \\c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := vm(t)
			h := newTestCommand(t, seer)
			var stdout, stderr bytes.Buffer
			res, err := h.Run(context.Background(), localExec(root), Request{Round: tt.round, Feedback: tt.feedback, Stdout: &stdout, Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK || res.Turns != 1 {
				t.Fatalf("result %+v; stderr %s", res, stderr.String())
			}
			if got := read(t, filepath.Join(root, "out/round")); got != string(rune('0'+tt.round)) {
				t.Fatalf("BUMPER_ROUND %q", got)
			}
			if got := strings.TrimSpace(read(t, filepath.Join(root, "out/pwd"))); got != filepath.Join(root, "workspace/repo") {
				t.Fatalf("working directory %q", got)
			}
			if env := read(t, filepath.Join(root, "out/env")); strings.Contains(env, envFeedback+"=") {
				t.Fatalf("the feedback is still in the program's environment:\n%s", env)
			}
			fb := filepath.Join(root, "workspace/task", "feedback-"+string(rune('0'+tt.round))+".md")
			if tt.round == 1 {
				if _, err := os.Stat(fb); !os.IsNotExist(err) {
					t.Fatalf("round 1 wrote a feedback file: %v", err)
				}
				return
			}
			if got := read(t, fb); got != tt.feedback {
				t.Fatalf("feedback file %q, want %q", got, tt.feedback)
			}
			if got := read(t, filepath.Join(root, "out/feedback")); got != tt.feedback {
				t.Fatalf("the program read %q from BUMPER_FEEDBACK_FILE, want %q", got, tt.feedback)
			}
		})
	}
}

// TestWrapperNeverRunsFeedback is what a hostile test output or issue text relayed
// through the feedback would try: shell syntax in every form, a NUL, invalid UTF-8, a
// body far larger than an environment string. None of it may run, and the wrapper
// must still write the file and start the program.
func TestWrapperNeverRunsFeedback(t *testing.T) {
	root := vm(t)
	pwn := func(n string) string { return filepath.Join(root, "pwned-"+n) }
	payloads := []struct{ name, text string }{
		{"command substitution", "$(touch " + pwn("1") + ")"},
		{"backticks", "`touch " + pwn("2") + "`"},
		{"single quote break-out", "'; touch " + pwn("3") + "; '"},
		{"double quote break-out", "\"; touch " + pwn("4") + "; \""},
		{"new line", "\ntouch " + pwn("5") + "\n"},
		{"variables and globs", "$BUMPER_OUT ${IFS} $0 $1 * ~ !!"},
		{"printf directives", "%s %n %d %b \\n \\c"},
		{"arithmetic", "$((1+1)) $(( $(touch " + pwn("6") + ") ))"},
		{"heredoc and redirections", "<<EOF\n> " + pwn("7") + "\nEOF\n"},
		{"NUL", "before\x00$(touch " + pwn("8") + ")after"},
		{"invalid UTF-8", "\xff\xfe$(touch " + pwn("9") + ")"},
		{"1 MB", strings.Repeat("$(touch "+pwn("10")+")`touch "+pwn("11")+"`;\n", 1<<20/40)},
	}
	for _, p := range payloads {
		t.Run(p.name, func(t *testing.T) {
			h := newTestCommand(t, seer)
			var stderr bytes.Buffer
			res, err := h.Run(context.Background(), localExec(root), Request{Round: 2, Feedback: p.text, Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK {
				t.Fatalf("result %+v; stderr %s", res, stderr.String())
			}
			want := boundFeedback(p.text)
			got := read(t, filepath.Join(root, "workspace/task/feedback-2.md"))
			if got != want {
				t.Fatalf("feedback file (%d bytes) differs from the feedback as bounded (%d bytes)", len(got), len(want))
			}
			if len(got) > MaxFeedbackBytes || !utf8.ValidString(got) || strings.ContainsRune(got, 0) {
				t.Fatalf("feedback file: %d bytes, valid UTF-8 %v, NUL %v", len(got), utf8.ValidString(got), strings.ContainsRune(got, 0))
			}
			if matches, _ := filepath.Glob(filepath.Join(root, "pwned-*")); len(matches) > 0 {
				t.Fatalf("the feedback ran: %v", matches)
			}
		})
	}
}

func TestBoundFeedback(t *testing.T) {
	tests := []struct {
		name, in string
		check    func(t *testing.T, out string)
	}{
		{"short stays", "all good\n", func(t *testing.T, out string) {
			if out != "all good\n" {
				t.Fatal(out)
			}
		}},
		{"NUL and invalid bytes shown", "a\x00b\xffc", func(t *testing.T, out string) {
			if out != "a\uFFFDb\uFFFDc" {
				t.Fatalf("%q", out)
			}
		}},
		{"cut on a character boundary with a note", strings.Repeat("é", MaxFeedbackBytes), func(t *testing.T, out string) {
			kept, note, ok := strings.Cut(out, "\n\n[Bumper cut this feedback")
			if !ok || len(out) > MaxFeedbackBytes || !utf8.ValidString(kept) || strings.Trim(kept, "é") != "" ||
				!strings.Contains(note, "it was 131072 bytes") {
				t.Fatalf("%d bytes, note %q", len(out), note)
			}
		}},
		{"exactly the bound", strings.Repeat("x", MaxFeedbackBytes), func(t *testing.T, out string) {
			if len(out) != MaxFeedbackBytes || strings.Contains(out, "[Bumper") {
				t.Fatalf("%d bytes", len(out))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, boundFeedback(tt.in)) })
	}
}

// TestWrapperDoesNotWriteThroughALink: a link the agent left where the next round's
// feedback goes is replaced, not written through.
func TestWrapperDoesNotWriteThroughALink(t *testing.T) {
	root := vm(t)
	victim := filepath.Join(root, "workspace/repo/victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	fb := filepath.Join(root, "workspace/task/feedback-2.md")
	if err := os.Symlink(victim, fb); err != nil {
		t.Fatal(err)
	}
	h := newTestCommand(t, seer)
	res, err := h.Run(context.Background(), localExec(root), Request{Round: 2, Feedback: "fix it"})
	if err != nil || !res.OK {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if got := read(t, victim); got != "untouched" {
		t.Fatalf("written through the link: %q", got)
	}
	if fi, err := os.Lstat(fb); err != nil || !fi.Mode().IsRegular() || read(t, fb) != "fix it" {
		t.Fatalf("feedback file %v, %v", fi, err)
	}
}

// TestWrapperRound1IgnoresRunnerVariable: a runner variable naming the feedback file
// does not make round 1 write anything.
func TestWrapperRound1IgnoresRunnerVariable(t *testing.T) {
	root := vm(t)
	victim := filepath.Join(root, "workspace/repo/victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newTestCommand(t, seer)
	res, err := h.Run(context.Background(), localExec(root), Request{Round: 1, Env: []string{EnvFeedbackFile + "=/workspace/repo/victim", envFeedback + "=overwritten"}})
	if err != nil || !res.OK {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if got := read(t, victim); got != "untouched" {
		t.Fatalf("round 1 wrote %q", got)
	}
}

// TestWrapperFailures: the wrapper stops with WrapperExitCode when it cannot write the
// file, and the program's own failures come back as they happened.
func TestWrapperFailures(t *testing.T) {
	t.Run("task directory missing", func(t *testing.T) {
		root := vm(t)
		if err := os.RemoveAll(filepath.Join(root, "workspace/task")); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		res, err := newTestCommand(t, seer).Run(context.Background(), localExec(root), Request{Round: 2, Feedback: "x", Stderr: &stderr})
		if err != nil {
			t.Fatal(err)
		}
		if res.OK || res.Exit.Code != WrapperExitCode || !strings.Contains(res.Reason, "feedback-2.md") ||
			!strings.Contains(stderr.String(), "bumper-command-harness: could not write the feedback file") {
			t.Fatalf("result %+v; stderr %q", res, stderr.String())
		}
		if _, err := os.Stat(filepath.Join(root, "out/round")); !os.IsNotExist(err) {
			t.Fatal("the program ran without its feedback")
		}
	})
	tests := []struct {
		name, command string
		want          ExitStatus
	}{
		{"exit status", "exit 7", ExitStatus{Code: 7}},
		{"killed", "kill -KILL $$", ExitStatus{Code: -1, Signal: "killed"}},
		{"not found", "no-such-program-here", ExitStatus{Code: 127}},
		{"syntax error", "if then fi (", ExitStatus{Code: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := vm(t)
			res, err := newTestCommand(t, tt.command).Run(context.Background(), localExec(root), Request{Round: 1})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK || res.Exit != tt.want {
				t.Fatalf("result %+v, want exit %+v", res, tt.want)
			}
		})
	}
}
