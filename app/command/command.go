// Package command reads the slash commands people give Bumper in issue and pull request
// comments: /approve, /stop, /retry, /status, /revise and /steer, and /bumper for help.
package command

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is which command a comment gives.
type Kind string

// The commands. Unknown is a slash word Bumper does not know; it gets the help reply.
const (
	Approve Kind = "approve"
	Stop    Kind = "stop"
	Retry   Kind = "retry"
	Status  Kind = "status"
	// Revise asks for a revise round on the work item's pull request; its Text is what
	// the round answers (optional).
	Revise Kind = "revise"
	// Steer gives words to the run that works now, or the next one; its Text is them.
	Steer   Kind = "steer"
	Help    Kind = "help"
	Unknown Kind = "unknown"
)

// Command is one parsed command.
type Command struct {
	Kind Kind
	// Name is the word as written after the slash (lower-cased), for the help reply.
	Name string
	// Args are the words after the command on its line, if any.
	Args []string
	// Text is, for /revise and /steer, everything the comment says after the command
	// word (on its line and the lines below), trimmed of white space at both ends: the
	// words for the agent. Empty for the other commands.
	Text string
}

// maxLine bounds how much of the command line is read; commands are one short word.
const maxLine = 200

// Parse finds the command in a comment body. Only the first non-blank line counts, and
// only when it starts with '/': a command quoted or mentioned later in a discussion
// does not act. ok is false when the comment gives no command.
func Parse(body string) (cmd Command, ok bool) {
	line := firstLine(body)
	if !strings.HasPrefix(line, "/") {
		return Command{}, false
	}
	if len(line) > maxLine {
		line = line[:maxLine]
		for !utf8.ValidString(line) {
			line = line[:len(line)-1]
		}
	}
	fields := strings.Fields(line[1:])
	if len(fields) == 0 {
		return Command{}, false
	}
	name := strings.ToLower(fields[0])
	args := fields[1:]
	switch name {
	case "approve", "stop", "retry", "status":
		return Command{Kind: Kind(name), Name: name, Args: args}, true
	case "revise", "steer":
		return Command{Kind: Kind(name), Name: name, Args: args, Text: textAfter(body, 1)}, true
	case "bumper":
		// "/bumper approve" is accepted as a long form of "/approve".
		if len(args) > 0 {
			sub := strings.ToLower(args[0])
			switch sub {
			case "approve", "stop", "retry", "status":
				return Command{Kind: Kind(sub), Name: sub, Args: args[1:]}, true
			case "revise", "steer":
				return Command{Kind: Kind(sub), Name: sub, Args: args[1:], Text: textAfter(body, 2)}, true
			}
		}
		return Command{Kind: Help, Name: name, Args: args}, true
	}
	if !isWord(name) {
		// "/ 2", "/path/to/file": not a command at all.
		return Command{}, false
	}
	return Command{Kind: Unknown, Name: name, Args: args}, true
}

// textAfter is the body after the first words words of its first non-blank line (the
// slash, then the command's words), trimmed: read from the body itself, so that it is
// not cut where the command line is, and keeps its lines.
func textAfter(body string, words int) string {
	rest := strings.TrimLeftFunc(body, unicode.IsSpace)
	rest = strings.TrimPrefix(rest, "/")
	for range words {
		rest = strings.TrimLeftFunc(rest, isLineSpace)
		i := strings.IndexFunc(rest, unicode.IsSpace)
		if i < 0 {
			return ""
		}
		rest = rest[i:]
	}
	return strings.TrimSpace(rest)
}

// isLineSpace is white space within a line: the command's words are on one line.
func isLineSpace(r rune) bool { return r != '\n' && unicode.IsSpace(r) }

func firstLine(body string) string {
	for _, l := range strings.Split(body, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// HelpText is the short reply to /bumper and unknown commands.
const HelpText = "Bumper understands these commands, from people with write access to this repository:\n\n" +
	"- `/approve` — authorize a run for the current text of this issue (and its plan, if any)\n" +
	"- `/stop` — stop the work item; no further runs start\n" +
	"- `/retry` — ask for approval again after a failed or stopped run\n" +
	"- `/status` — show where the work item is\n" +
	"- `/revise [TEXT]` — on Bumper's pull request: a revise round answering TEXT (and the reviews waiting); after a person pushed, it takes the branch back at its head\n" +
	"- `/steer TEXT` — words for the agent that works now, or for the next run if none does\n"
