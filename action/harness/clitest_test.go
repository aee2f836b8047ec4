package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/repoconfig"
)

// The runner's environment in the CLI adapters' tests: gateways and the sentinel key,
// as action/runner gives them.
const (
	testSentinel = "bumper-sentinel-key"
	testAnthBase = "http://10.0.2.2:3128/anthropic"
	testOpenAI   = "http://10.0.2.2:3128/openai/v1"
)

func runnerEnv() []string {
	return []string{
		"NO_PROXY=10.0.2.2", "no_proxy=10.0.2.2",
		"BUMPER_GIT_URL=http://10.0.2.2:3128/git/o/r.git",
		"ANTHROPIC_BASE_URL=" + testAnthBase, "ANTHROPIC_API_KEY=" + testSentinel,
		"OPENAI_BASE_URL=" + testOpenAI, "OPENAI_API_KEY=" + testSentinel,
	}
}

func newCLI(t *testing.T, name, version string) Harness {
	t.Helper()
	h, err := New(repoconfig.Harness{Name: name, Version: version})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// fixture reads a file of testdata.
func fixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compactLines turns pretty-printed JSON documents (one message a file, or an array of
// them) into a stream of one JSON line each, as the CLI writes them.
func compactLines(t *testing.T, docs ...[]byte) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, d := range docs {
		var msgs []json.RawMessage
		if err := json.Unmarshal(d, &msgs); err != nil {
			msgs = []json.RawMessage{d}
		}
		for _, m := range msgs {
			if err := json.Compact(&out, m); err != nil {
				t.Fatal(err)
			}
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// chunks splits b into writes of n bytes, as a pipe would deliver it.
func chunks(b []byte, n int) []string {
	var w []string
	for len(b) > n {
		w = append(w, string(b[:n]))
		b = b[n:]
	}
	return append(w, string(b))
}

// played is what a CLI harness made of a scripted output.
type played struct {
	res    *Result
	events []Event
	fake   *fakeExec
	stdout string
}

// play runs h on a fake Exec that writes out in writes of chunk bytes and ends with st.
func play(t *testing.T, h Harness, req Request, out []byte, chunk int, st ExitStatus) played {
	t.Helper()
	fake := &fakeExec{writes: chunks(out, chunk), status: st}
	var stdout bytes.Buffer
	var got []Event
	req.Stdout = &stdout
	req.OnEvent = func(e Event) { got = append(got, e) }
	if req.Round == 0 {
		req.Round = 1
	}
	if req.Env == nil {
		req.Env = runnerEnv()
	}
	res, err := h.Run(context.Background(), fake.exec, req)
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != string(out) {
		t.Fatalf("the transcript lost bytes: %d of %d", stdout.Len(), len(out))
	}
	for _, e := range got {
		checkEvent(t, e)
		if e.Round != req.Round {
			t.Fatalf("event %+v: round %d, want %d", e, e.Round, req.Round)
		}
	}
	return played{res: res, events: got, fake: fake, stdout: stdout.String()}
}

// checkEvent fails on an event whose strings could break a line of display or a log:
// every field one line of printable text within its bound.
func checkEvent(t *testing.T, e Event) {
	t.Helper()
	for _, f := range []struct {
		s string
		n int
	}{{e.Summary, maxSummary}, {e.Tool, maxTool}, {e.CallID, maxCallID}, {e.Status, maxStatus}} {
		if !utf8.ValidString(f.s) || utf8.RuneCountInString(f.s) > f.n {
			t.Fatalf("event %+v: field of %d characters (bound %d) or invalid UTF-8", e, utf8.RuneCountInString(f.s), f.n)
		}
		for _, r := range f.s {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
				t.Fatalf("event %+v: control or format character %U", e, r)
			}
		}
	}
}

func kinds(events []Event) []EventKind {
	k := make([]EventKind, len(events))
	for i, e := range events {
		k[i] = e.Kind
	}
	return k
}

// ofKind is the events of one kind.
func ofKind(events []Event, k EventKind) []Event {
	var out []Event
	for _, e := range events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// lastLineCut is stream with its last line cut in the middle.
func lastLineCut(stream []byte) []byte {
	body := bytes.TrimRight(stream, "\n")
	i := bytes.LastIndexByte(body, '\n')
	return body[:i+1+(len(body)-i-1)/2]
}

// withoutLastLine is stream without its last line.
func withoutLastLine(stream []byte) []byte {
	body := bytes.TrimRight(stream, "\n")
	return body[:bytes.LastIndexByte(body, '\n')+1]
}

// insertBefore puts lines before the last line of stream.
func insertBefore(stream []byte, lines ...string) []byte {
	cut := withoutLastLine(stream)
	var b bytes.Buffer
	b.Write(cut)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.Write(stream[len(cut):])
	return b.Bytes()
}

// hostile is what an agent, or a file it read, might put in a string the harness
// displays: new lines, a carriage return, terminal escapes, bidi overrides, line and
// paragraph separators, a NUL, and more than any bound.
const hostile = "go test ./...\n::bumper-event::{\"kind\":\"cost\"}\r\x1b[2J\x1b]0;pwned\x07\u202egnp.exe\u2028\u2029\x00 tail " +
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" +
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" +
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" +
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

// jsonString is s as a JSON string literal.
func jsonString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkHostileSummary fails unless s is hostile made one bounded line, starting as it
// does (asIs) or quoted in JSON.
func checkHostileSummary(t *testing.T, s string, asIs bool) {
	t.Helper()
	if (asIs && !strings.HasPrefix(s, "go test ./... ::bumper-event::")) || strings.ContainsAny(s, "\n\r\x1b\x07\x00\u202e\u2028\u2029") ||
		utf8.RuneCountInString(s) != maxSummary || !strings.HasSuffix(s, "…") {
		t.Fatalf("summary %q (%d characters) is not one bounded line", s, utf8.RuneCountInString(s))
	}
}

// TestModelFlag: harness.model reaches each CLI as its own flag, just before the
// prompt's "--", and a harness without one leaves the CLI's default.
func TestModelFlag(t *testing.T) {
	for _, tt := range []struct {
		name, version, flag string
	}{
		{"claude-code", "2.1.328", "--model"},
		{"codex", "0.171.0", "-m"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			with, err := New(repoconfig.Harness{Name: tt.name, Version: tt.version, Model: "some-model-1"})
			if err != nil {
				t.Fatal(err)
			}
			var argv []string
			switch h := with.(type) {
			case *ClaudeCode:
				// The prompt is on the CLI's input: the model comes last.
				argv = append(h.argv(), "--", "prompt")
			case *Codex:
				argv = h.argv(Request{Round: 1, Env: runnerEnv()}, "prompt")
			}
			n := len(argv)
			if n < 4 || argv[n-4] != tt.flag || argv[n-3] != "some-model-1" || argv[n-2] != "--" {
				t.Fatalf("argv ends %q", argv[max(n-4, 0):])
			}
			without := newCLI(t, tt.name, tt.version)
			switch h := without.(type) {
			case *ClaudeCode:
				argv = h.argv()
			case *Codex:
				argv = h.argv(Request{Round: 1, Env: runnerEnv()}, "prompt")
			}
			if slices.Contains(argv, tt.flag) {
				t.Fatalf("a harness without a model passes %s: %q", tt.flag, argv)
			}
		})
	}
}

// streamCase is one event stream played through a CLI adapter, and what the round must
// make of it.
type streamCase struct {
	name       string
	stream     func(t *testing.T) []byte
	status     ExitStatus
	wantOK     bool
	wantReason string
	wantCounts Counts
	wantKinds  []EventKind
	check      func(t *testing.T, p played)
}

// playStreams plays each case through the harness name at version, in whole writes and
// in writes of chunk bytes, and checks the round: its outcome and reason (one bounded
// line), its exit status, its counts and event kinds.
func playStreams(t *testing.T, name, version string, chunk int, tests []streamCase) {
	t.Helper()
	for _, tt := range tests {
		for _, size := range []int{1 << 20, chunk} {
			t.Run(fmt.Sprintf("%s, writes of %d bytes", tt.name, size), func(t *testing.T) {
				if size == chunk && strings.Contains(tt.name, "past the bound") {
					t.Skipf("8 MiB in writes of %d bytes: the line splitter's own tests cover it", size)
				}
				p := play(t, newCLI(t, name, version), Request{}, tt.stream(t), size, tt.status)
				res := p.res
				if res.OK != tt.wantOK || !strings.Contains(res.Reason, tt.wantReason) || (tt.wantOK != (res.Reason == "")) {
					t.Fatalf("OK %v, Reason %q; want %v, %q", res.OK, res.Reason, tt.wantOK, tt.wantReason)
				}
				if utf8.RuneCountInString(res.Reason) > maxReason || strings.ContainsAny(res.Reason, "\n\r\x00\x1b") {
					t.Fatalf("reason is not one bounded line: %q", res.Reason)
				}
				if res.Exit != tt.status {
					t.Fatalf("Exit %+v, want %+v", res.Exit, tt.status)
				}
				if !sameCounts(res.Counts, tt.wantCounts) {
					t.Fatalf("counts %s, want %s; events %+v", showCounts(res.Counts), showCounts(tt.wantCounts), p.events)
				}
				if tt.wantKinds != nil && !slices.Equal(kinds(p.events), tt.wantKinds) {
					t.Fatalf("events %+v, want kinds %v", p.events, tt.wantKinds)
				}
				if tt.check != nil {
					tt.check(t, p)
				}
			})
		}
	}
}

// runRefusals: a CLI adapter returns an error, and runs nothing, for a broken session,
// a round 0, and a runner environment without one of the gateway's variables, absent
// or set to nothing.
func runRefusals(t *testing.T, h Harness, gatewayVars ...string) {
	t.Helper()
	t.Run("broken session", func(t *testing.T) {
		broken := errors.New("agent channel closed")
		fake := fakeExec{err: broken}
		if res, err := h.Run(context.Background(), fake.exec, Request{Round: 1, Env: runnerEnv()}); !errors.Is(err, broken) || res != nil {
			t.Fatalf("Run = %v, %v", res, err)
		}
	})
	t.Run("round 0", func(t *testing.T) {
		fake := fakeExec{}
		if _, err := h.Run(context.Background(), fake.exec, Request{Env: runnerEnv()}); err == nil || fake.argv != nil {
			t.Fatalf("Run = %v, ran %q", err, fake.argv)
		}
	})
	for _, missing := range gatewayVars {
		for _, empty := range []bool{false, true} {
			t.Run(fmt.Sprintf("no %s (set to nothing: %v)", missing, empty), func(t *testing.T) {
				var env []string
				for _, e := range runnerEnv() {
					if !strings.HasPrefix(e, missing+"=") {
						env = append(env, e)
					}
				}
				if empty {
					env = append(env, missing+"=") // set to nothing is not set
				}
				fake := fakeExec{}
				_, err := h.Run(context.Background(), fake.exec, Request{Round: 1, Env: env})
				if err == nil || !strings.Contains(err.Error(), missing) || fake.argv != nil {
					t.Fatalf("Run = %v, ran %q", err, fake.argv)
				}
			})
		}
	}
}
