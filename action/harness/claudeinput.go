package harness

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/bumperdev/bumper/app/wire"
)

// claudeInput is what the claude-code harness writes on the CLI's standard input
// (--input-format stream-json): the round's prompt as the first user message, then
// each steer as a user message of its own. The CLI takes a message that comes while
// the agent works into the running turn at its next step, and one that comes after a
// turn as a new turn; with --replay-user-messages it writes each message back on its
// output when it takes it, which is when the agent got it. When a turn ends (a result
// event) with no steer written and not yet taken, or in an error, the input is closed
// and the CLI ends.
type claudeInput struct {
	prompt  string
	steers  <-chan wire.Steer
	reports *steerReports
	now     func() time.Time

	mu     sync.Mutex
	feed   Feed
	loop   *steerLoop
	closed bool
	// pending are the steers written and not yet taken, by the message's uuid, in the
	// order written.
	pending map[string]wire.Steer
	order   []string
	// err says why the prompt could not be written, if it could not.
	err error
}

func newClaudeInput(req Request, prompt string) *claudeInput {
	return &claudeInput{prompt: prompt, steers: req.Steers, reports: &steerReports{fn: req.OnSteer}, now: time.Now,
		pending: map[string]wire.Steer{}}
}

// claudeUserMessage is one line of the CLI's stream-json input: a user message.
type claudeUserMessage struct {
	Type            string        `json:"type"`
	Message         claudeContent `json:"message"`
	ParentToolUseID *string       `json:"parent_tool_use_id"`
	SessionID       string        `json:"session_id"`
	// UUID names the message: the CLI's replay of it, and its command_lifecycle events,
	// carry it.
	UUID string `json:"uuid"`
}

type claudeContent struct {
	Role    string       `json:"role"`
	Content []claudeText `json:"content"`
}

type claudeText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// userMessageLine is text as one line of stream-json input: a JSON string holds no raw
// line break (encoding/json writes \n, \r, U+2028 and U+2029 escaped), so no text can
// end the message or add another.
func userMessageLine(uuid, text string) ([]byte, error) {
	b, err := json.Marshal(claudeUserMessage{Type: "user", SessionID: "", UUID: uuid,
		Message: claudeContent{Role: "user", Content: []claudeText{{Type: "text", Text: text}}}})
	if err != nil {
		return nil, fmt.Errorf("failed to encode a message for claude-code: %w", err)
	}
	return append(b, '\n'), nil
}

// ready writes the prompt and starts taking steers; Exec calls it before the CLI runs.
func (c *claudeInput) ready(f Feed) {
	c.mu.Lock()
	c.feed = f
	c.err = c.writeLocked(newUUID(), c.prompt)
	if c.err != nil {
		// Without its prompt the CLI would wait for one: it ends instead.
		c.closeLocked()
	}
	c.mu.Unlock()
	c.loop = startSteers(c.steers, c.give)
}

// give writes a steer as a user message, unless the input is closed.
func (c *claudeInput) give(s wire.Steer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		c.reports.notDelivered(s, NoteFinished)
		return
	}
	id := newUUID()
	if err := c.writeLocked(id, steerMessage(s)); err != nil {
		c.reports.notDelivered(s, "failed to give it to the agent: "+err.Error())
		return
	}
	c.pending[id] = s
	c.order = append(c.order, id)
}

func (c *claudeInput) writeLocked(uuid, text string) error {
	line, err := userMessageLine(uuid, text)
	if err != nil {
		return err
	}
	_, err = c.feed.Write(line)
	return err
}

// replayed notes that the CLI took the message uuid: a steer's reached the agent.
func (c *claudeInput) replayed(uuid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.pending[uuid]
	if !ok {
		return
	}
	delete(c.pending, uuid)
	c.reports.delivered(s, c.now())
}

// turnEnded closes the input after a turn that ended in an error, or with no steer
// waiting for the CLI (which would start a turn of its own for it).
func (c *claudeInput) turnEnded(isError bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && (isError || len(c.pending) == 0) {
		c.closeLocked()
	}
}

func (c *claudeInput) closeLocked() {
	c.closed = true
	if c.feed != nil {
		_ = c.feed.CloseStdin()
	}
}

// finish stops taking steers once the CLI has ended and says what became of those it
// was given but did not take.
func (c *claudeInput) finish() {
	c.loop.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, id := range c.order {
		if s, ok := c.pending[id]; ok {
			delete(c.pending, id)
			c.reports.notDelivered(s, NoteNotTaken)
		}
	}
}

// newUUID is a random version 4 UUID: the agent cannot guess the name of a steer's
// message to fake its replay.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
