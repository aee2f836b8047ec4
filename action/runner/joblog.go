package runner

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bumperdev/bumper/action/gates"
)

// jobLog is the run's share of the job log for what runs in the VM (an environment's
// setup, the agent's and the verification's rounds): the first Config.MaxJobLog bytes of
// all of it. A job log is read in a browser, and GitHub keeps it for months; the
// artifact's files keep each phase's output whole, within DefaultMaxTranscript.
type jobLog struct {
	mu   sync.Mutex
	w    io.Writer
	left int64
	max  int64
}

// take writes what of p the share still holds and returns how many bytes that was; a
// cut falls on a character boundary.
func (j *jobLog) take(p []byte) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := len(p)
	if int64(n) > j.left {
		n = int(j.left)
		for n > 0 && !utf8.RuneStart(p[n]) {
			n--
		}
	}
	if n == 0 {
		return 0
	}
	// The job log is the runner's standard output: a failed write ends nothing, as
	// before (a live log that breaks does not fail the run).
	_, _ = j.w.Write(p[:n])
	j.left -= int64(n)
	if j.left < int64(utf8.UTFMax) && n < len(p) {
		j.left = 0
	}
	return n
}

// note writes one line of the runner's own, within the job log whatever its share.
func (j *jobLog) note(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = fmt.Fprintf(j.w, "\n[bumper: "+format+"]\n", args...)
}

// phaseLog is one phase's output as it runs: all of it to its file in the artifact,
// within DefaultMaxTranscript, and to the job log within the run's share. Once the share
// is spent the job log says so and where the rest is; Close says how much it left out.
//
// The job log gets whole lines, with the credentials the secrets gate knows masked
// (gates.MaskLines): the gate that blocks a push runs after the agent, and a token the
// agent printed would otherwise be in a log GitHub keeps for months. The artifact's
// files are masked once the gate has run (maskKept), before anything uploads them.
type phaseLog struct {
	mu    sync.Mutex
	file  limitWriter
	log   *jobLog
	name  string // the file's name in the artifact
	total int64
	shown int64
	// pending is the start of a line held back from the job log until its end comes.
	pending []byte
	noted   bool
}

// maxPendingLine bounds a line held back for the job log: a longer one goes out in
// pieces (each masked), so output without newlines still shows as it comes.
const maxPendingLine = 64 << 10

func (p *phaseLog) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.file.Write(b)
	p.total += int64(len(b))
	if p.noted {
		// The share is spent: nothing more goes to the job log.
		return len(b), nil
	}
	p.pending = append(p.pending, b...)
	cut := bytes.LastIndexByte(p.pending, '\n') + 1
	if cut == 0 {
		if len(p.pending) < maxPendingLine {
			return len(b), nil
		}
		cut = tokenSafeCut(p.pending)
	}
	rest := append([]byte(nil), p.pending[cut:]...)
	p.toLog(p.pending[:cut])
	if !p.noted {
		p.pending = rest
	}
	return len(b), nil
}

// tokenSafeCut is where a long line without a newline may be cut for the job log: after
// its last byte that no credential's token holds (a space, a quote, a comma), so that no
// token is split between two pieces masked apart; the whole line when its last
// maxPendingLine/2 bytes are one run of token characters.
func tokenSafeCut(b []byte) int {
	for i := len(b) - 1; i >= len(b)-maxPendingLine/2 && i >= 0; i-- {
		c := b[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("_+/=.~-", c) >= 0) {
			return i + 1
		}
	}
	return len(b)
}

// toLog writes b, masked, to the job log within the share, and notes once when the
// share ran out.
func (p *phaseLog) toLog(b []byte) {
	masked := gates.MaskLines(b)
	n := p.log.take(masked)
	p.shown += int64(n)
	if n < len(masked) && !p.noted {
		p.noted, p.pending = true, nil // nothing more goes to the job log
		p.log.note("the job log shows at most %s of what runs in the VM; the rest of this output is in %s in the run's artifact", mib(p.log.max), p.name)
	}
}

// Close writes a last line without a newline and says, when the job log left some of
// the phase's output out, how much and where it is. The file is the caller's to close.
func (p *phaseLog) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) > 0 && !p.noted {
		p.toLog(p.pending)
		p.pending = nil
	}
	if !p.noted {
		return nil
	}
	kept := "all of it"
	if p.total > DefaultMaxTranscript {
		kept = "its first " + mib(DefaultMaxTranscript)
	}
	p.log.note("%d bytes of this output (of %d) are not in the job log; %s in the run's artifact holds %s", p.total-p.shown, p.total, p.name, kept)
	p.noted, p.total, p.shown = false, 0, 0
	return nil
}

// mib is n bytes in MiB, for a person.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// logTo is where a phase's output goes (the environment's setup, an agent or reviewer
// round, a verification round): file, named name in the artifact, within
// DefaultMaxTranscript (what runs writes as much as it likes until its timeout; the
// runner host's disk is not its to fill), and the job log within the run's share. Close
// it when the phase's output ends.
func (rec *recorder) logTo(file io.Writer, name string) *phaseLog {
	return &phaseLog{file: limitWriter{w: file, left: DefaultMaxTranscript}, log: rec.job, name: name}
}

// limitWriter keeps the first left bytes and drops the rest, never failing the writer
// it is tied to (the live log goes on).
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return len(p), nil
	}
	q := p
	if int64(len(q)) > l.left {
		q = q[:l.left]
	}
	n, err := l.w.Write(q)
	l.left -= int64(n)
	if err != nil {
		l.left = 0
	}
	return len(p), nil
}
