// Package lines splits output written in pieces into bounded lines, for the parsers
// that read a command's output while it streams (the harness's event lines,
// verification's test2json events). Output comes from inside the VM: a line never
// grows past its bound however long the program writes without a newline.
package lines

import "bytes"

// Writer calls Line for each line written to it, without its "\n". A line longer than
// Max bytes is passed once, cut to Max, with long set, and the rest of it is skipped.
// Flush passes a last line that has no "\n". The slice is only valid during the call.
// A Writer is not safe for concurrent use; its Write never fails.
type Writer struct {
	Max  int
	Line func(line []byte, long bool)

	buf      []byte
	skipping bool // inside an over-long line already passed
}

// Write splits p into lines.
func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		chunk, rest, ended := bytes.Cut(p, []byte{'\n'})
		p = rest
		if w.skipping {
			w.skipping = !ended
			continue
		}
		if len(w.buf)+len(chunk) > w.Max {
			w.buf = append(w.buf, chunk[:w.Max-len(w.buf)]...)
			w.Line(w.buf, true)
			w.buf = w.buf[:0]
			w.skipping = !ended
			continue
		}
		w.buf = append(w.buf, chunk...)
		if ended {
			w.Line(w.buf, false)
			w.buf = w.buf[:0]
		}
	}
	return n, nil
}

// Flush passes the last line when it had no "\n", and starts over.
func (w *Writer) Flush() {
	if len(w.buf) > 0 {
		w.Line(w.buf, false)
	}
	w.buf = w.buf[:0]
	w.skipping = false
}
