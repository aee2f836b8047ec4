package evidence

import "time"

// How a steer reached the agent (Steer.Via).
const (
	// SteerViaTask: in the task the agent read when it started (wire.Task.Steers,
	// kept by serve while no run could take them).
	SteerViaTask = "task"
	// SteerViaMessage: as a user message on claude-code's stream-json input.
	SteerViaMessage = "message"
	// SteerViaFile: as a file in the command harness's steering directory.
	SteerViaFile = "file"
	// SteerViaPrompt: in the prompt the harness started the agent's round with (codex).
	SteerViaPrompt = "prompt"
)

// MaxSteers bounds the steers one run takes (and its evidence lists), as serve bounds
// the steers one report may speak of (it refuses a report of more); serve keeps the
// rest, which the run never reports, for the next run.
const MaxSteers = 64

// Steer is a writer's /steer the run was given, and what became of it: who wrote it,
// when, when the run had it, and when and how the agent got it, or why it did not.
type Steer struct {
	ID        int64     `json:"id"`
	Author    string    `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	// ArrivedAt is when the run had it: from serve's should-stop answer, or with the
	// task when the run started.
	ArrivedAt time.Time `json:"arrived_at"`
	// Via says how it reached the agent (SteerVia*), with DeliveredAt; empty when it did
	// not, and Note says why (serve keeps it for the next round).
	Via         string    `json:"via,omitempty"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
	Note        string    `json:"note,omitempty"`
	// Text is the writer's words (at most wire.MaxSteerText bytes): untrusted, quoted
	// as text wherever shown.
	Text string `json:"text"`
}
