package evidence

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/jsondoc"
)

// RepliesFile is where the agent of a revise round writes its replies to the review
// threads inside the VM (schema/replies-v1.json).
const RepliesFile = "/out/replies.json"

// Bounds of replies.json (the schema says the same of the reply's body).
const (
	// MaxReplyBody bounds one reply's body, in characters.
	MaxReplyBody = 4000
	// maxRepliesBytes bounds the file: 50 replies of MaxReplyBody characters, escaped.
	maxRepliesBytes = 1 << 20
)

// repliesFile is replies.json.
type repliesFile struct {
	SchemaVersion int          `json:"schema_version"`
	Replies       []wire.Reply `json:"replies"`
}

// ParseReplies reads the agent's replies.json, which is untrusted: at most 1 MiB of
// valid UTF-8 holding one JSON object with no duplicate keys, valid against
// schema/replies-v1.json (version 1, no unknown fields, at most 50 replies, each a
// thread id, whether the round changed the code, and a body of 1 to 4,000 characters
// that is not blank); then each reply must answer a thread the task named (threads, the
// task's ReviewComment.ThreadID), and no thread twice. The error says what was wrong
// and where; a file with any error is refused whole, so nothing of it is posted.
func ParseReplies(data []byte, threads []int64) ([]wire.Reply, error) {
	if len(data) > maxRepliesBytes {
		return nil, fmt.Errorf("replies.json is %d bytes; at most %d are read", len(data), maxRepliesBytes)
	}
	if !utf8.Valid(data) {
		return nil, errors.New("replies.json is not valid UTF-8")
	}
	if err := jsondoc.CheckShape(data); err != nil {
		return nil, fmt.Errorf("replies.json: %w", err)
	}
	if err := validateSchema(repliesSchemaURL, data); err != nil {
		return nil, fmt.Errorf("replies.json does not match schema/replies-v1.json: %w", err)
	}
	var f repliesFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("replies.json: %w", err)
	}
	seen := map[int64]bool{}
	for i, r := range f.Replies {
		switch {
		case !slices.Contains(threads, r.ThreadID):
			return nil, fmt.Errorf("replies.json: /replies/%d answers thread %d, which is not one of the task's review threads %v", i, r.ThreadID, threads)
		case seen[r.ThreadID]:
			return nil, fmt.Errorf("replies.json: /replies/%d answers thread %d a second time; one reply per thread", i, r.ThreadID)
		case strings.TrimSpace(r.Body) == "":
			return nil, fmt.Errorf("replies.json: /replies/%d has a blank body", i)
		}
		seen[r.ThreadID] = true
	}
	return f.Replies, nil
}

// Threads are the review threads a task's comments are in, each once, in order: the
// threads a reply may answer.
func Threads(t wire.Task) []int64 {
	var out []int64
	for _, c := range t.Review {
		if c.ThreadID > 0 && !slices.Contains(out, c.ThreadID) {
			out = append(out, c.ThreadID)
		}
	}
	return out
}
