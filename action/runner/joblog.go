package runner

import (
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
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
type phaseLog struct {
	mu      sync.Mutex
	file    limitWriter
	log     *jobLog
	name    string // the file's name in the artifact
	total   int64
	omitted int64
}

func (p *phaseLog) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.file.Write(b)
	p.total += int64(len(b))
	n := p.log.take(b)
	if n < len(b) {
		if p.omitted == 0 {
			p.log.note("the job log shows at most %s of what runs in the VM; the rest of this output is in %s in the run's artifact", mib(p.log.max), p.name)
		}
		p.omitted += int64(len(b) - n)
	}
	return len(b), nil
}

// Close says, when the job log left some of the phase's output out, how much and where
// it is. The file is the caller's to close.
func (p *phaseLog) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.omitted == 0 {
		return nil
	}
	kept := "all of it"
	if p.total > DefaultMaxTranscript {
		kept = "its first " + mib(DefaultMaxTranscript)
	}
	p.log.note("%d bytes of this output (of %d) are not in the job log; %s in the run's artifact holds %s", p.omitted, p.total, p.name, kept)
	p.omitted = 0
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
