package guest

import (
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// stdinQueue bounds the chunks of input waiting for a command that does not read its
// standard input: past it, the agent reads no more from the host until the command
// reads or ends (and the host's writes wait).
const stdinQueue = 64

// input serves the host's frames while a command runs: its standard input, the files
// of its steering directory, until it ends.
type input struct {
	a      *Agent
	log    *zerolog.Logger
	stdin  *stdinPump // nil: the command reads /dev/null
	steer  *steerDir  // nil: the command has no steering directory
	exited <-chan error
	// closed says the host closed the command's standard input; waitErr is how the
	// command ended (its Wait's error).
	closed  bool
	waitErr error
}

// serve handles frames until the command ends. The error says the host broke the
// protocol (a request while a command runs) or went away.
func (in *input) serve(frames <-chan frameOrErr) error {
	for {
		select {
		case err := <-in.exited:
			in.waitErr = err
			return nil
		case fe := <-frames:
			if fe.err != nil {
				return fmt.Errorf("the host's channel failed while a command ran: %w", fe.err)
			}
			ended, err := in.frame(fe.f)
			if err != nil || ended {
				return err
			}
		}
	}
}

// frame handles one frame; ended says the command ended meanwhile (waitErr is set).
func (in *input) frame(f agentproto.Frame) (ended bool, err error) {
	switch f.Type {
	case agentproto.TypeStdin:
		if in.stdin == nil || in.closed {
			in.log.Warn().Int(logKeyBytes, len(f.Payload)).Msg("dropped input for a standard input the command does not have")
			return false, nil
		}
		return in.send(f.Payload), nil
	case agentproto.TypeStdinClose:
		if in.stdin == nil || in.closed {
			return false, nil
		}
		in.closed = true
		return in.send(nil), nil
	case agentproto.TypeSteer:
		ack := in.place(f.Payload)
		payload, err := agentproto.Encode(ack)
		if err != nil {
			return false, err
		}
		return false, in.a.w.Write(agentproto.TypeSteered, payload)
	default:
		return false, fmt.Errorf("host sent a %s request while a command ran: one command at a time", f.Type)
	}
}

// send queues p (nil: the end of input) for the command's standard input, waiting
// while the queue is full; it reports whether the command ended meanwhile.
func (in *input) send(p []byte) bool {
	select {
	case in.stdin.ch <- p:
		return false
	case err := <-in.exited:
		in.waitErr = err
		return true
	}
}

// place puts a steer frame's file in the steering directory and says how that went.
func (in *input) place(payload []byte) agentproto.SteerAck {
	var f agentproto.SteerFile
	if err := agentproto.Decode(payload, &f); err != nil {
		ack := agentproto.SteerAck{Error: err.Error()}
		if agentproto.CheckSteerName(f.Name) == nil {
			ack.Name = f.Name
		}
		return ack
	}
	if in.steer == nil {
		return agentproto.SteerAck{Name: f.Name, Error: "the command has no steering directory"}
	}
	if err := in.steer.place(f); err != nil {
		in.log.Warn().Err(err).Str(logKeyName, f.Name).Msg("failed to place a steering file")
		return agentproto.SteerAck{Name: f.Name, Error: err.Error()}
	}
	in.log.Info().Str(logKeyName, f.Name).Int(logKeyBytes, len(f.Data)).Msg("placed a steering file")
	return agentproto.SteerAck{Name: f.Name}
}

// stdinPump writes what the host sends to the command's standard input, on a goroutine
// of its own: a command that does not read it must not stop the agent from serving
// the rest of its input.
type stdinPump struct {
	w    io.WriteCloser
	ch   chan []byte // nil: close the command's standard input
	done chan struct{}
}

func newStdinPump(w io.WriteCloser) *stdinPump {
	return &stdinPump{w: w, ch: make(chan []byte, stdinQueue), done: make(chan struct{})}
}

// run writes each chunk, closes on nil, and drains the rest once writing fails (the
// command ended: Wait closes the pipe).
func (p *stdinPump) run() {
	defer close(p.done)
	broken := false
	for b := range p.ch {
		switch {
		case broken:
		case b == nil:
			_ = p.w.Close()
			broken = true
		default:
			if _, err := p.w.Write(b); err != nil {
				broken = true
			}
		}
	}
}

// stop ends the pump once the command has ended; nil does nothing.
func (p *stdinPump) stop() {
	if p == nil {
		return
	}
	close(p.ch)
	<-p.done
}
