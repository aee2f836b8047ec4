package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/hiddenchar"
	"github.com/bumperdev/bumper/internal/lines"
	"github.com/bumperdev/bumper/internal/textcut"
)

// EventKind says what an event reports.
type EventKind string

// The event kinds.
const (
	// EventTurn starts a turn of the agent (one model response and what it asked for).
	EventTurn EventKind = "turn"
	// EventToolCall is the agent calling a tool (Tool names it, Summary says with what).
	EventToolCall EventKind = "tool_call"
	// EventToolResult is a tool's answer (Status "ok" or "error").
	EventToolResult EventKind = "tool_result"
	// EventCost is the agent's own account of what it spent so far in the round
	// (CostMicroUSD, cumulative: the last one counts).
	EventCost EventKind = "cost"
	// EventMessage is text the agent wrote (Summary), or a note of the harness.
	EventMessage EventKind = "message"
	// EventUnknown is an event the harness could not understand: an unknown kind, or a
	// line that is not a valid event (Summary says why).
	EventUnknown EventKind = "unknown"
)

// Event is one thing the agent reported, for counting and display. Every field comes
// from inside the VM: bounded here, never trusted for anything else.
type Event struct {
	Kind EventKind `json:"kind"`
	// Round is the agent round; the harness sets it.
	Round int `json:"round,omitempty"`
	// Turn is the turn the event belongs to, 0 when not said.
	Turn int `json:"turn,omitempty"`
	// Tool names the tool of a tool_call or tool_result.
	Tool string `json:"tool,omitempty"`
	// CallID pairs a tool_result with its tool_call.
	CallID string `json:"call_id,omitempty"`
	// Summary is one line for display: the command a tool ran, the agent's message.
	Summary string `json:"summary,omitempty"`
	// Status is a tool_result's "ok" or "error", or a message's "error".
	Status string `json:"status,omitempty"`
	// CostMicroUSD is a cost event's cumulative spend of the round, in micro-USD.
	CostMicroUSD int64 `json:"cost_micro_usd,omitempty"`
}

// Bounds of events.
const (
	// MaxEventLineBytes bounds one event line; a longer one is an unknown event.
	MaxEventLineBytes = 16 << 10
	// MaxEvents bounds the events of a round passed to OnEvent; later ones are counted
	// (Counts.DroppedEvents) but not passed on.
	MaxEvents = 10000
	// maxTurn bounds a turn number.
	maxTurn = 1 << 20
	// maxCostMicroUSD bounds a self-reported spend ($1,000,000).
	maxCostMicroUSD = 1_000_000 * 1_000_000
	// Field bounds, in characters.
	maxSummary = 500
	maxTool    = 100
	maxCallID  = 100
	maxStatus  = 32
)

// Counts sums the events of a round.
type Counts struct {
	// Turns counts turn events.
	Turns int
	// ToolCalls counts tool_call events.
	ToolCalls int
	// UnknownEvents counts events not understood: unknown kinds and invalid event lines.
	UnknownEvents int
	// DroppedEvents counts events past MaxEvents, counted but not passed to OnEvent.
	DroppedEvents int
	// SelfReportedMicroUSD is the last cost event's spend; nil when the agent said
	// nothing.
	SelfReportedMicroUSD *int64
}

// eventSink counts events and passes them on, within MaxEvents.
type eventSink struct {
	round     int
	onEvent   func(Event)
	delivered int
	counts    Counts
}

func (s *eventSink) add(e Event) {
	e.Round = s.round
	switch e.Kind {
	case EventTurn:
		s.counts.Turns++
	case EventToolCall:
		s.counts.ToolCalls++
	case EventCost:
		c := e.CostMicroUSD
		s.counts.SelfReportedMicroUSD = &c
	case EventUnknown:
		s.counts.UnknownEvents++
	}
	if s.onEvent == nil {
		return
	}
	if s.delivered == MaxEvents {
		s.counts.DroppedEvents++
		return
	}
	s.delivered++
	s.onEvent(e)
}

// line reads one event line (JSON, without the stdout prefix); long says it was cut.
func (s *eventSink) line(b []byte, long bool) {
	if long {
		s.add(Event{Kind: EventUnknown, Summary: fmt.Sprintf("event line longer than %d bytes", MaxEventLineBytes)})
		return
	}
	s.add(parseEvent(b))
}

// parseEvent reads one event as the command harness's program writes it; anything
// it cannot take is an unknown event saying why.
func parseEvent(b []byte) Event {
	b = bytes.TrimSpace(b)
	var raw struct {
		Kind         string `json:"kind"`
		Turn         int    `json:"turn"`
		Tool         string `json:"tool"`
		CallID       string `json:"call_id"`
		Summary      string `json:"summary"`
		Status       string `json:"status"`
		CostMicroUSD *int64 `json:"cost_micro_usd"`
	}
	if !utf8.Valid(b) {
		return Event{Kind: EventUnknown, Summary: "event line is not valid UTF-8"}
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Event{Kind: EventUnknown, Summary: "invalid event: " + clean(err.Error(), maxSummary)}
	}
	e := Event{
		Kind:    EventKind(raw.Kind),
		Turn:    raw.Turn,
		Tool:    clean(raw.Tool, maxTool),
		CallID:  clean(raw.CallID, maxCallID),
		Summary: clean(raw.Summary, maxSummary),
		Status:  clean(raw.Status, maxStatus),
	}
	if raw.Turn < 0 || raw.Turn > maxTurn {
		return Event{Kind: EventUnknown, Summary: fmt.Sprintf("invalid event: turn %d outside 0..%d", raw.Turn, maxTurn)}
	}
	switch e.Kind {
	case EventTurn, EventToolCall, EventToolResult, EventMessage:
	case EventCost:
		if raw.CostMicroUSD == nil || *raw.CostMicroUSD < 0 || *raw.CostMicroUSD > maxCostMicroUSD {
			return Event{Kind: EventUnknown, Summary: "invalid cost event: cost_micro_usd must be a whole number of micro-USD from 0 to 10^12"}
		}
		e.CostMicroUSD = *raw.CostMicroUSD
	case EventUnknown:
		// The program says so itself; counted as such.
	default:
		e.Summary = clean("unknown event kind "+string(e.Kind), maxSummary)
		e.Kind = EventUnknown
	}
	return e
}

// clean makes s one line of at most n characters, cut with "…": line breaks, tabs and
// every character a reader cannot see or that reorders the display (internal/hiddenchar:
// controls, format, bidirectional and tag characters, default-ignorables, variation
// selectors) become spaces, so that an event's text shows all it holds, on one line.
func clean(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' || hiddenchar.Is(r) {
			return ' '
		}
		return r
	}, s)
	return textcut.FitRunes(s, n, textcut.Ellipsis)
}

// EventsFile is where a command harness's program may append events as JSON lines;
// it comes back with /out when the VM's session ends (ReadEvents).
const EventsFile = "/out/bumper-events.jsonl"

// EventPrefix starts a line of the program's stdout that carries an event, read as the
// output streams.
const EventPrefix = "::bumper-event::"

// ReadEvents reads an events file (EventsFile, back from the VM) of the given round:
// one event per line, as on stdout without EventPrefix; blank lines are skipped.
// onEvent (may be nil) gets each event up to MaxEvents. Only r's errors are errors.
func ReadEvents(r io.Reader, round int, onEvent func(Event)) (Counts, error) {
	s := &eventSink{round: round, onEvent: onEvent}
	w := &lines.Writer{Max: MaxEventLineBytes, Line: func(b []byte, long bool) {
		if !long && len(bytes.TrimSpace(b)) == 0 {
			return
		}
		s.line(b, long)
	}}
	if _, err := io.Copy(w, r); err != nil {
		return s.counts, fmt.Errorf("failed to read events: %w", err)
	}
	w.Flush()
	return s.counts, nil
}

// stdoutEvents passes the program's stdout on to the transcript and reads the lines
// that start with EventPrefix as events.
type stdoutEvents struct {
	out   io.Writer
	sink  *eventSink
	lines *lines.Writer
}

func newStdoutEvents(out io.Writer, sink *eventSink) *stdoutEvents {
	s := &stdoutEvents{out: out, sink: sink}
	// A prefixed line may be MaxEventLineBytes of JSON after the prefix.
	s.lines = &lines.Writer{Max: len(EventPrefix) + MaxEventLineBytes, Line: func(b []byte, long bool) {
		b = bytes.TrimSuffix(b, []byte{'\r'})
		if rest, ok := bytes.CutPrefix(b, []byte(EventPrefix)); ok {
			sink.line(rest, long)
		}
	}}
	return s
}

// Write passes p to the transcript whole (a transcript that fails does not stop the
// agent), then reads its event lines.
func (s *stdoutEvents) Write(p []byte) (int, error) {
	_, _ = s.out.Write(p)
	return s.lines.Write(p)
}

// flush reads a last line without a newline.
func (s *stdoutEvents) flush() { s.lines.Flush() }
