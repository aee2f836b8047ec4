package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// Markers of the status comment. StatusMarker opens every status comment so the App can
// find its own among an issue's comments; the record sits between RecordOpen and
// RecordClose, invisible in GitHub's rendering. The rest of RecordOpen's line carries the
// record's signature: "sig=hmac-sha256:<hex>".
const (
	StatusMarker = "<!-- bumper:status -->"
	RecordOpen   = "<!-- bumper:record"
	RecordClose  = "\n-->"
	sigPrefix    = " sig=hmac-sha256:"
)

// ErrNoRecord is returned when a comment holds no machine record.
var ErrNoRecord = errors.New("no bumper record in the comment")

// ErrUnsigned is returned for a record without a valid signature: anyone who can make the
// bot author an edit (a leaked installation token, a run that reached the API) could
// have written it, so it is not trusted.
var ErrUnsigned = errors.New("the status record is not signed by this Bumper")

// IsStatusComment reports whether a comment body is (or claims to be) a status comment.
func IsStatusComment(body string) bool { return strings.HasPrefix(body, StatusMarker) }

// Encode renders the status comment: a human summary that ends with the note on hidden
// text, then the signed record as JSON in an HTML comment. encoding/json escapes '<' and
// '>', so the JSON cannot close the HTML comment early whatever the fields hold. The
// note is the one part the issue's text sizes, so it is written once (the record names
// it by length and digest) and bounded (boundedNotice); should the comment still pass
// MaxCommentBytes, the note gives way to a short one, and a comment still too long is an
// error, never a write GitHub would refuse.
func (s *Sealer) Encode(r *Record) (string, error) {
	notice := boundedNotice(r.SpecNotice)
	body, err := s.encode(r, notice)
	if err == nil && len(body) > MaxCommentBytes && notice != "" && notice != overflowNotice {
		body, err = s.encode(r, overflowNotice)
	}
	if err != nil {
		return "", err
	}
	if len(body) > MaxCommentBytes {
		return "", fmt.Errorf("failed to encode the record of %s: %w (%d bytes; at most %d)", r.ID(), ErrTooLong, len(body), MaxCommentBytes)
	}
	return body, nil
}

func (s *Sealer) encode(r *Record, notice string) (string, error) {
	raw, err := json.MarshalIndent(stored{Record: r, Notice: refOf(notice)}, "", " ")
	if err != nil {
		return "", fmt.Errorf("failed to encode the record of %s: %w", r.ID(), err)
	}
	var b strings.Builder
	b.WriteString(StatusMarker)
	b.WriteString("\n")
	b.WriteString(s.summary(r, notice))
	b.WriteString("\n")
	b.WriteString(RecordOpen)
	b.WriteString(sigPrefix)
	b.WriteString(s.sign(raw))
	b.WriteString("\n")
	b.Write(raw)
	b.WriteString(RecordClose)
	b.WriteString("\n")
	return b.String(), nil
}

// Decode reads the record out of a status comment and checks its signature before it
// reads anything else, then that it is well formed. It trusts nothing: a missing or
// wrong signature, unknown fields, an unknown schema version or state, or values out of
// range are errors saying which.
func (s *Sealer) Decode(body string) (*Record, error) {
	start, header, raw, err := frame(body)
	if err != nil {
		return nil, err
	}
	sig, signed := strings.CutPrefix(header, sigPrefix)
	switch {
	case header == "":
		return nil, fmt.Errorf("%w: it has no signature (records written before Bumper signed them, schema 1, also kept 64-bit hashes: "+
			"remove and re-add the trigger label to ask for approval again)", ErrUnsigned)
	case !signed:
		return nil, fmt.Errorf("%w: its signature line %q is not hmac-sha256", ErrUnsigned, header)
	case !s.verify(raw, sig):
		return nil, fmt.Errorf("%w: its signature does not match its content (edited by someone other than Bumper, or signed with a key this Bumper does not hold)", ErrUnsigned)
	}
	return parse(body, start, raw)
}

// DecodeUnverified reads the record out of a status comment as Decode does, but without
// checking its signature: for reading what records say where the key is not at hand
// (`bumper report` without serve's key), never for acting on them. The App itself only
// ever uses Decode.
func DecodeUnverified(body string) (*Record, error) {
	start, _, raw, err := frame(body)
	if err != nil {
		return nil, err
	}
	return parse(body, start, raw)
}

// frame finds the record in a status comment: where its opening marker starts, the rest
// of that line (the signature) and the record's JSON bytes.
func frame(body string) (start int, header string, raw []byte, err error) {
	if len(body) > MaxCommentBytes {
		return 0, "", nil, fmt.Errorf("status comment is %d bytes, more than GitHub allows; it was not written by Bumper", len(body))
	}
	if !IsStatusComment(body) {
		return 0, "", nil, ErrNoRecord
	}
	start = strings.Index(body, RecordOpen)
	if start < 0 {
		return 0, "", nil, ErrNoRecord
	}
	rest := body[start+len(RecordOpen):]
	header, rest, ok := strings.Cut(rest, "\n")
	if !ok {
		return 0, "", nil, fmt.Errorf("status comment's record is not closed with %q", strings.TrimSpace(RecordClose))
	}
	end := strings.Index(rest, RecordClose)
	if end < 0 {
		return 0, "", nil, fmt.Errorf("status comment's record is not closed with %q", strings.TrimSpace(RecordClose))
	}
	if strings.Contains(rest[end+len(RecordClose):], RecordOpen) {
		return 0, "", nil, errors.New("status comment holds more than one record")
	}
	return start, header, []byte(rest[:end]), nil
}

// parse decodes a framed record strictly and reads its note on hidden text from the
// comment's human part (body up to start).
func parse(body string, start int, raw []byte) (*Record, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r Record
	w := stored{Record: &r}
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("failed to parse the status record: %w", err)
	}
	if dec.More() {
		return nil, errors.New("status record has data after the JSON object")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	switch {
	case w.Notice != nil && w.Legacy != "":
		return nil, errors.New("status record holds its note on hidden text twice")
	case w.Notice != nil:
		notice, err := readNotice(body[:start], w.Notice)
		if err != nil {
			return nil, err
		}
		r.SpecNotice = notice
	default:
		r.SpecNotice = w.Legacy
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
		switch {
		case a.By == "" || !IsRevision(a.Revision):
			return fmt.Errorf("status record approval %d names no approver or no full-length revision", i+1)
		case a.CommentID < 1:
			// Every approval is a comment; one that points at none proves nothing.
			return fmt.Errorf("status record approval %d by @%s points at no comment", i+1, a.By)
		}
	}
	if !IsRevision(r.SpecRevision) {
		return fmt.Errorf("status record spec revision %q is not a full-length sha256 revision", r.SpecRevision)
	}
	if r.PlanRevision != "" && !IsRevision(r.PlanRevision) {
		return fmt.Errorf("status record plan revision %q is not a full-length sha256 revision", r.PlanRevision)
	}
	if r.PolicyVersion != "" && r.PolicyVersion != DefaultPolicyVersion && !IsRevision(r.PolicyVersion) {
		return fmt.Errorf("status record policy version %q is not a full-length sha256 revision", r.PolicyVersion)
	}
	for _, a := range r.Attempts {
		if !IsRevision(a.Revision) {
			return fmt.Errorf("status record attempt %d's revision is not a full-length sha256 revision", a.Number)
		}
	}
	return r.validateConversation()
}

// DefaultPolicyVersion is the policy version of a repository without a policy file.
const DefaultPolicyVersion = repoconfig.DefaultRevision

func validRepository(s string) bool {
	owner, name, ok := strings.Cut(s, "/")
	return ok && owner != "" && name != "" && !strings.ContainsAny(name, "/ \n")
}

// Summary is the human part of the status comment. It names the current text revision
// by its short id, which is what `/approve ID` takes, and ends with what the rendered
// issue hides from the approver.
func (s *Sealer) Summary(r *Record) string { return s.summary(r, boundedNotice(r.SpecNotice)) }

// summary is Summary with the notice as the comment shows it (see boundedNotice).
func (s *Sealer) summary(r *Record, notice string) string {
	var b strings.Builder
	id := s.ShortID(r.TextRevision())
	fmt.Fprintf(&b, "**Bumper work item** · state: `%s`\n\n", r.State)
	switch r.State {
	case Requested:
		b.WriteString("Bumper has recorded this request.\n")
	case Planning:
		b.WriteString("A read-only plan run is under way; its plan will be posted here for approval.\n")
	case AwaitingApproval:
		fmt.Fprintf(&b, "Waiting for approval: a maintainer with write access can comment `/approve %s` to start a run for exactly this revision of the issue%s.%s\n",
			id, map[bool]string{true: " and its plan", false: ""}[r.PlanRevision != ""],
			map[bool]string{true: " Read the note on hidden text below first.", false: ""}[notice != ""])
	case Reviewing:
		fmt.Fprintf(&b, "A review run (attempt %d) with a fresh context is judging pull request #%d. Comment `/stop` to stop it.\n", len(r.Attempts), r.PullRequest)
	case Running, Verifying:
		what := "Attempt"
		if a := r.CurrentAttempt(); a != nil {
			switch a.Stage {
			case wire.StageFix:
				what = "A fix round, attempt"
			case wire.StageRevise:
				what = "A revise round, attempt"
			case wire.StageUpdate:
				what = "An update round, attempt"
			}
		}
		fmt.Fprintf(&b, "%s %d is under way. Comment `/stop` to stop it.\n", what, len(r.Attempts))
	case InReview:
		fmt.Fprintf(&b, "Pull request #%d is ready for human review. Bumper never merges: a person does.\n", r.PullRequest)
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
	if r.Protection != "" {
		fmt.Fprintf(&b, "\n**Branch protection:** %s\n", oneLine(r.Protection))
	}
	if h := r.HumanPush; h != nil {
		fmt.Fprintf(&b, "\n@%s pushed to `%s` (`%.12s`): Bumper will not push to it again unless a writer comments `/revise` on the pull request.\n", h.By, r.WorkBranch, h.Head)
	}
	if n := len(r.Pending); n > 0 {
		fmt.Fprintf(&b, "\n%d review(s) or `/revise` comment(s) wait for the next revise round.\n", n)
	}
	if n := len(r.Steers); n > 0 {
		fmt.Fprintf(&b, "\n%d `/steer` comment(s) wait to reach a run.\n", n)
	}
	fmt.Fprintf(&b, "\n| | |\n|---|---|\n| requested by | @%s |\n| revision | `%s` |\n", r.Requester, id)
	if c := r.SpecChange; c != nil {
		fmt.Fprintf(&b, "| last edit | %s by @%s at %s |\n", oneLine(c.What), c.By, c.At.UTC().Format(time.RFC3339))
	}
	if r.BaseCommit != "" {
		fmt.Fprintf(&b, "| base | `%s` @ `%.12s` |\n", r.BaseBranch, r.BaseCommit)
	}
	if a := r.ActiveApproval(); a != nil {
		fmt.Fprintf(&b, "| approved by | @%s at %s |\n", a.By, a.At.UTC().Format(time.RFC3339))
	}
	if r.PullRequest != 0 {
		fmt.Fprintf(&b, "| pull request | #%d (`%s` @ `%.12s`) |\n", r.PullRequest, r.WorkBranch, r.PullHead)
	}
	if v := r.Verdict; v != nil {
		check := "fails"
		if v.Passed {
			check = "passes"
		}
		what := fmt.Sprintf("%s (confidence %.2f, %d findings)", v.Verdict, v.Confidence, v.Findings)
		if v.Verdict == "" {
			what = "none usable (the `bumper/verdict` check says why)"
		}
		fmt.Fprintf(&b, "| reviewer verdict | %s; `bumper/verdict` %s |\n", what, check)
	}
	if q := r.Queue; q != nil {
		eta := "no run of this repository to estimate from yet"
		if q.Estimate > 0 {
			eta = fmt.Sprintf("about %s from %s", roundEstimate(q.Estimate), q.At.UTC().Format("15:04 MST"))
		}
		fmt.Fprintf(&b, "| queue | waiting for a runner: %d of %d of this repository's Bumper runs; starts in %s |\n", q.Position, q.Of, eta)
	}
	if w, a := r.SlotWait, r.CurrentAttempt(); w != nil && a != nil && r.State.Active() && w.Attempt == a.Number {
		fmt.Fprintf(&b, "| runner host | waiting for a VM slot on the runner host (since %s) |\n", w.Since.UTC().Format("15:04 MST"))
	}
	if n := len(r.Attempts); n > 0 {
		a := r.Attempts[n-1]
		outcome := a.Outcome
		if outcome == "" {
			outcome = "pending"
			if a.Runner != "" {
				outcome = "started on " + oneLine(a.Runner)
			}
		}
		fmt.Fprintf(&b, "| attempt | %d (%s): %s |\n", n, a.Stage, outcome)
	}
	if notice != "" {
		// Last, so that Decode finds it just above the record.
		b.WriteString("\n" + notice)
	}
	return b.String()
}

// noMarkers keeps multi-line text from closing or faking an HTML comment.
func noMarkers(s string) string {
	return strings.NewReplacer("<!--", "&lt;!--", "-->", "--&gt;").Replace(s)
}

// oneLine keeps a reason from breaking the Markdown quote or faking a record marker.
func oneLine(s string) string {
	return noMarkers(strings.Join(strings.Fields(s), " "))
}

// roundEstimate writes an estimate as a person would: minutes, or hours and minutes.
func roundEstimate(d time.Duration) string {
	if d < time.Minute {
		return "a minute"
	}
	d = d.Round(time.Minute)
	if d < time.Hour {
		return fmt.Sprintf("%d min", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
