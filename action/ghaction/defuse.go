package ghaction

import (
	"io"
	"sync"
)

// wordJoiner is an invisible character put between "##" and "[".
const wordJoiner = "\u2060"

// Defuse returns w with every "##[" written through it broken by a word joiner, however
// the bytes are split between writes. GitHub's runner takes "##[command]" anywhere in a
// line of a step's output for a workflow command (the older form, still honoured), and
// bumper run's output quotes the agent, the repository's tests and git's errors about
// paths the agent made; ::stop-commands:: (Env.StopCommands) does not stop this form.
// Bumper's own commands use the "::" form, which this leaves alone.
func Defuse(w io.Writer) io.Writer { return &defuser{w: w} }

// defuser is Defuse's writer.
type defuser struct {
	mu     sync.Mutex
	w      io.Writer
	hashes int // '#' seen in a row, across writes
}

func (d *defuser) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []byte
	start := 0
	for i, c := range p {
		if c == '[' && d.hashes >= 2 {
			out = append(out, p[start:i]...)
			out = append(out, wordJoiner...)
			start = i
		}
		if c == '#' {
			d.hashes++
		} else {
			d.hashes = 0
		}
	}
	if out == nil {
		_, err := d.w.Write(p)
		return len(p), err
	}
	out = append(out, p[start:]...)
	_, err := d.w.Write(out)
	return len(p), err
}
