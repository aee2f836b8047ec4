package demo

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/bumperdev/bumper/internal/textcut"
)

// progress shows the demo's steps: on a terminal, a spinner line per step that
// becomes a tick or a cross when the step ends; elsewhere (a log, CI), one line when a
// step starts and one when it ends, so the output reads the same in a file.
type progress struct {
	w   io.Writer
	tty bool
	now func() time.Time
}

// step is one step of the demo, running.
type step struct {
	p      *progress
	title  string
	start  time.Time
	mu     sync.Mutex
	detail string
	stop   chan struct{}
	done   sync.WaitGroup
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// start begins a step.
func (p *progress) start(title string) *step {
	s := &step{p: p, title: title, start: p.now(), stop: make(chan struct{})}
	if !p.tty {
		fmt.Fprintf(p.w, "-> %s\n", title)
		return s
	}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			s.mu.Lock()
			line := fmt.Sprintf("%s %s (%s)", spinner[i%len(spinner)], s.title, s.elapsed())
			if s.detail != "" {
				line += ": " + s.detail
			}
			s.mu.Unlock()
			// \r and erase-line redraw the one line; the line is cut so that it never
			// wraps, which would leave a trail of half lines behind.
			fmt.Fprintf(p.w, "\r\033[K%s", textcut.FitRunes(line, 110, textcut.Ellipsis))
			select {
			case <-s.stop:
				fmt.Fprint(p.w, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// update sets what the step is doing now (the run's phase, say). Plain output prints
// each new detail once.
func (s *step) update(detail string) {
	s.mu.Lock()
	changed := detail != s.detail
	s.detail = detail
	s.mu.Unlock()
	if changed && !s.p.tty && detail != "" {
		fmt.Fprintf(s.p.w, "   ... %s (%s)\n", detail, s.elapsed())
	}
}

func (s *step) elapsed() string {
	return s.p.now().Sub(s.start).Round(100 * time.Millisecond).String()
}

func (s *step) end(mark, result string) {
	if s.p.tty {
		close(s.stop)
		s.done.Wait()
	}
	line := fmt.Sprintf("%s %s (%s)", mark, s.title, s.elapsed())
	if result != "" {
		line += ": " + result
	}
	fmt.Fprintln(s.p.w, line)
}

// ok ends the step as done, with what came of it.
func (s *step) ok(result string) { s.end("✓", result) }

// fail ends the step as failed.
func (s *step) fail(err error) { s.end("✗", err.Error()) }

// note prints lines under the last step, indented: what a person would read on the
// page (the status comment, the bot's reply).
func (p *progress) note(lines ...string) {
	for _, l := range lines {
		fmt.Fprintf(p.w, "    %s\n", l)
	}
}

// excerpt is the first n non-empty lines of a Markdown text, each cut to a line's
// width, for a note.
func excerpt(md string, n int) []string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		l = strings.TrimSpace(l)
		// Tables, HTML (the footnote) and code fences do not read as text.
		if l == "" || strings.HasPrefix(l, "<") || strings.HasPrefix(l, "|") || strings.HasPrefix(l, "```") {
			continue
		}
		out = append(out, textcut.FitRunes(l, 100, textcut.Ellipsis))
		if len(out) == n {
			break
		}
	}
	return out
}
