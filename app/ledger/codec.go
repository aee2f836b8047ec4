package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Markers of the status comment. StatusMarker opens every status comment so the App can
// find its own among an issue's comments; the record sits between RecordOpen and
// RecordClose, invisible in GitHub's rendering.
const (
	StatusMarker = "<!-- bumper:status -->"
	RecordOpen   = "<!-- bumper:record\n"
	RecordClose  = "\n-->"
)

// maxRecordBytes bounds what the decoder reads: a GitHub comment holds at most 65536
// characters, so anything larger was not written by the App.
const maxRecordBytes = 65536

// ErrNoRecord is returned when a comment holds no machine record.
var ErrNoRecord = errors.New("no bumper record in the comment")

// IsStatusComment reports whether a comment body is (or claims to be) a status comment.
func IsStatusComment(body string) bool { return strings.HasPrefix(body, StatusMarker) }

// Encode renders the status comment: a human summary, then the record as JSON in an
// HTML comment. encoding/json escapes '<' and '>', so the JSON cannot close the HTML
// comment early whatever the fields hold.
func Encode(r *Record) (string, error) {
	raw, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return "", fmt.Errorf("failed to encode the record of %s: %w", r.ID(), err)
	}
	var b strings.Builder
	b.WriteString(StatusMarker)
	b.WriteString("\n")
	b.WriteString(Summary(r))
	b.WriteString("\n")
	b.WriteString(RecordOpen)
	b.Write(raw)
	b.WriteString(RecordClose)
	b.WriteString("\n")
	return b.String(), nil
}

// Decode reads the record out of a status comment and checks that it is well formed.
// It trusts nothing: unknown fields, an unknown schema version or state, or values out
// of range are errors saying which.
func Decode(body string) (*Record, error) {
	if len(body) > maxRecordBytes {
		return nil, fmt.Errorf("status comment is %d bytes, more than GitHub allows; it was not written by Bumper", len(body))
	}
	if !IsStatusComment(body) {
		return nil, ErrNoRecord
	}
	start := strings.Index(body, RecordOpen)
	if start < 0 {
		return nil, ErrNoRecord
	}
	rest := body[start+len(RecordOpen):]
	end := strings.Index(rest, RecordClose)
	if end < 0 {
		return nil, fmt.Errorf("status comment's record is not closed with %q", strings.TrimSpace(RecordClose))
	}
	if strings.Contains(rest[end+len(RecordClose):], RecordOpen) {
		return nil, errors.New("status comment holds more than one record")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(rest[:end])))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("failed to parse the status record: %w", err)
	}
	if dec.More() {
		return nil, errors.New("status record has data after the JSON object")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Validate checks the invariants every stored record keeps.
func (r *Record) Validate() error {
	switch {
	case r.Schema != SchemaVersion:
		return fmt.Errorf("status record schema %d is not supported (this Bumper reads %d)", r.Schema, SchemaVersion)
	case r.Revision < 1:
		return fmt.Errorf("status record revision %d: must be 1 or more", r.Revision)
	case !validRepository(r.Repository):
		return fmt.Errorf("status record repository %q: want owner/name", r.Repository)
	case r.Issue < 1:
		return fmt.Errorf("status record issue %d: must be 1 or more", r.Issue)
	case !r.State.Valid():
		return fmt.Errorf("status record state %q is unknown", r.State)
	case r.Requester == "":
		return errors.New("status record names no requester")
	}
	for i, a := range r.Attempts {
		if a.Number != i+1 {
			return fmt.Errorf("status record attempt %d is numbered %d", i+1, a.Number)
		}
	}
	for i, a := range r.Approvals {
		if a.By == "" || a.Revision == "" {
			return fmt.Errorf("status record approval %d names no approver or revision", i+1)
		}
	}
	return nil
}

func validRepository(s string) bool {
	owner, name, ok := strings.Cut(s, "/")
	return ok && owner != "" && name != "" && !strings.ContainsAny(name, "/ \n")
}

// Summary is the human part of the status comment.
func Summary(r *Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Bumper work item** · state: `%s`\n\n", r.State)
	switch r.State {
	case Requested:
		b.WriteString("Bumper has recorded this request.\n")
	case Planning:
		b.WriteString("A read-only plan run is under way; its plan will be posted here for approval.\n")
	case AwaitingApproval:
		b.WriteString("Waiting for approval: a maintainer with write access can comment `/approve` to start a run for the current text of this issue.\n")
	case Running, Verifying, Reviewing:
		fmt.Fprintf(&b, "Attempt %d is under way. Comment `/stop` to stop it.\n", len(r.Attempts))
	case InReview:
		fmt.Fprintf(&b, "A pull request (#%d) is ready for human review.\n", r.PullRequest)
	case Done:
		b.WriteString("Done: the pull request was merged.\n")
	case Failed, Stopped:
		b.WriteString("No run is under way. A maintainer can comment `/retry` to ask again.\n")
	case Error:
		b.WriteString("Bumper cannot trust this work item's record and has stopped acting on it. Remove and re-add the `agent:implement` label to start over.\n")
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "\n> %s\n", oneLine(r.Reason))
	}
	fmt.Fprintf(&b, "\n| | |\n|---|---|\n| requested by | @%s |\n| spec revision | `%s` |\n", r.Requester, r.SpecRevision)
	if r.BaseCommit != "" {
		fmt.Fprintf(&b, "| base | `%s` @ `%.12s` |\n", r.BaseBranch, r.BaseCommit)
	}
	if r.PlanRevision != "" {
		fmt.Fprintf(&b, "| plan revision | `%s` |\n", r.PlanRevision)
	}
	if a := r.ActiveApproval(); a != nil {
		fmt.Fprintf(&b, "| approved by | @%s at %s |\n", a.By, a.At.UTC().Format(time.RFC3339))
	}
	if n := len(r.Attempts); n > 0 {
		a := r.Attempts[n-1]
		outcome := a.Outcome
		if outcome == "" {
			outcome = "pending"
		}
		fmt.Fprintf(&b, "| attempt | %d (%s): %s |\n", n, a.Stage, outcome)
	}
	return b.String()
}

// oneLine keeps a reason from breaking the Markdown quote or faking a record marker.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer("<!--", "&lt;!--", "-->", "--&gt;").Replace(s)
}
