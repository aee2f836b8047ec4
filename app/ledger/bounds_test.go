package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bumperdev/bumper/app/wire"
)

// worstText is every kind of character that takes the most bytes in the record's JSON
// (six for "<", ">", "&", a control character, U+2028), with invalid UTF-8 and a long
// backtick run, far longer than any bound.
var worstText = strings.Repeat("<>&\x01\u2028\xff`\"\\-->", 5000)

// largestRecord is the largest record a work item can reach: MaxAttempts runs of every
// stage, many approvals, and every field at its largest, free text at worst.
func largestRecord() *Record {
	rev := ContentRevision([]byte("x"))
	at := time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC)
	r := &Record{Schema: SchemaVersion, Revision: 1 << 40, Repository: strings.Repeat("o", 39) + "/" + strings.Repeat("r", 100),
		Issue: 1 << 30, State: AwaitingApproval, Requester: strings.Repeat("u", 39), SpecRevision: rev, PlanRevision: rev,
		BaseBranch: strings.Repeat("b", 255), BaseCommit: strings.Repeat("c", 40), PolicyVersion: rev, PullRequest: 1 << 30,
		PlanComment: 1 << 50, WorkBranch: strings.Repeat("w", 40), PullHead: strings.Repeat("h", 40), AuditHead: rev,
		Reason: worstText, Protection: worstText, UpdatedAt: at,
		SpecChange: &SpecChange{At: at, By: strings.Repeat("u", 39), What: "title and body", From: rev},
		Verdict: &Verdict{Attempt: 99, Head: strings.Repeat("h", 40), Verdict: "request_changes", Confidence: 0.123456789,
			Findings: 50, Digest: rev, Problem: worstText, Passed: true, CheckRunID: 1 << 50, ReviewID: 1 << 50},
		HumanPush: &HumanPush{By: strings.Repeat("u", 39), At: at, Head: strings.Repeat("h", 40)},
		BaseMoved: strings.Repeat("m", 40), BranchUpdates: 1 << 30, SlotWait: &SlotWait{Attempt: 1 << 30, Since: at},
		Updating: &BranchUpdate{From: strings.Repeat("f", 40), To: strings.Repeat("t", 40), Diff: rev, At: at}}
	for range MaxPending {
		r.Pending = append(r.Pending, largestInput(rev))
	}
	for range MaxSteers {
		r.Steers = append(r.Steers, SteerRef{ID: 1 << 50, By: strings.Repeat("u", 39), At: at, For: MaxAttempts})
	}
	for range 100 {
		r.Approvals = append(r.Approvals, Approval{Approval: wire.Approval{By: strings.Repeat("u", 39), At: at, Revision: rev, CommentID: 1 << 50}, Voided: worstText})
	}
	var stages []wire.Stage
	for len(stages) < MaxAttempts {
		stages = append(stages, wire.StageImplement, wire.StageReview, wire.StageFix, wire.StageReview)
	}
	for i, st := range stages[:MaxAttempts] {
		r.Attempts = append(r.Attempts, Attempt{Number: i + 1, Stage: st, Revision: rev, NonceHash: rev, NonceUsed: true,
			RunID: 1 << 50, Runner: strings.Repeat("n", 100), ImageDigest: rev, StartedAt: at, EndedAt: at,
			Outcome: "dispatch-failed", CostMicroUSD: 1 << 50, EvidenceDigest: rev, HeadCommit: strings.Repeat("h", 40),
			RunOutcome: "over_budget", RunReason: worstText, FixChecks: []string{strings.Repeat("k", 100), strings.Repeat("k", 100)},
			UpdateTo: strings.Repeat("t", 40)})
		for range MaxPending + 1 {
			r.Attempts[i].Inputs = append(r.Attempts[i].Inputs, largestInput(rev))
		}
	}
	for range 16 {
		r.NoteDelivery(strings.Repeat("d", 36) + string(rune('a'+len(r.Deliveries))))
	}
	return r
}

// largestInput is an Input at its largest.
func largestInput(rev string) Input {
	return Input{Kind: wire.ReviewKindFinding, ID: 1 << 50, Digest: rev, After: 1 << 50, Through: 1 << 50}
}

// TestLargestRecordFits: the largest record, compacted as every write compacts it, with
// the largest note on hidden text the comment keeps, fits in one GitHub comment counted
// in bytes (never fewer than GitHub's characters), and keeps the note whole.
func TestLargestRecordFits(t *testing.T) {
	s := testSealer(t)
	for _, st := range States() {
		t.Run(string(st), func(t *testing.T) {
			r := largestRecord()
			r.State = st
			r.Compact()
			// Any text of MaxNotice bytes: Render's output is UTF-8 without comment markers.
			r.SpecNotice = strings.Repeat("<", MaxNotice-1) + "\n"
			body, err := s.Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(body); n > MaxCommentBytes {
				t.Fatalf("the largest status comment takes %d bytes; a GitHub comment holds %d", n, MaxCommentBytes)
			}
			if !strings.Contains(body, r.SpecNotice) || strings.Contains(body, overflowNotice) {
				t.Fatal("the largest record cut the note on hidden text short")
			}
			got, err := s.Decode(body)
			if err != nil {
				t.Fatal(err)
			}
			if got.SpecNotice != r.SpecNotice || len(got.Approvals) != KeptApprovals || got.Reason != r.Reason {
				t.Fatalf("the largest record does not round-trip: %d approvals, notice of %d bytes", len(got.Approvals), len(got.SpecNotice))
			}
			t.Logf("%d attempts, %d approvals: %d bytes, %d of them the notice (%d to spare)",
				len(r.Attempts), len(r.Approvals), len(body), len(r.SpecNotice), MaxCommentBytes-len(body))
		})
	}
}

// TestNoticeOnce: the note on hidden text, which an issue's author sizes, is in the
// status comment once (not again in the JSON, where each "<" would take six bytes), and
// a note longer than MaxNotice gives way to a short one.
func TestNoticeOnce(t *testing.T) {
	s := testSealer(t)
	for _, tt := range []struct {
		name, notice, shown string
	}{
		{"short", "**hidden**: `<b>` and <<<\n", "**hidden**: `<b>` and <<<\n"},
		{"at the bound", strings.Repeat("<", MaxNotice-1) + "\n", strings.Repeat("<", MaxNotice-1) + "\n"},
		{"past the bound", strings.Repeat("<", MaxNotice) + "\n", overflowNotice},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := sampleRecord()
			r.State = AwaitingApproval
			r.SpecNotice = tt.notice
			body, err := s.Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(body, tt.shown) != 1 {
				t.Fatalf("the notice is shown %d times:\n%.2000s", strings.Count(body, tt.shown), body)
			}
			if json := body[strings.Index(body, RecordOpen):]; strings.Contains(json, "<<") || strings.Contains(json, `\u003c\u003c`) {
				t.Fatalf("the record's JSON holds the notice again:\n%.2000s", json)
			}
			if !strings.Contains(body, "Read the note on hidden text below first.") {
				t.Fatal("the approver is not pointed at the note")
			}
			got, err := s.Decode(body)
			if err != nil {
				t.Fatal(err)
			}
			if got.SpecNotice != tt.shown {
				t.Fatalf("decoded notice %.80q, want %.80q", got.SpecNotice, tt.shown)
			}
			if len(body) > MaxCommentBytes {
				t.Fatalf("%d bytes", len(body))
			}
		})
	}
	t.Run("a record with no room left shows the short note", func(t *testing.T) {
		r := largestRecord()
		r.Compact()
		r.Requester = strings.Repeat("u", 6000) // past what any real record holds
		r.SpecNotice = strings.Repeat("<", MaxNotice-1) + "\n"
		body, err := s.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(body) > MaxCommentBytes || !strings.Contains(body, overflowNotice) {
			t.Fatalf("%d bytes; short note shown: %v", len(body), strings.Contains(body, overflowNotice))
		}
		r.Requester = strings.Repeat("u", 40000)
		if _, err := s.Encode(r); !errors.Is(err, ErrTooLong) {
			t.Fatalf("a record that cannot fit: %v", err)
		}
	})
}

// TestForgedNotice: the note sits outside the signed JSON, so whoever can make the bot
// author an edit might rewrite it to hide what the issue hides; the record's digest of
// it makes any change untrusted.
func TestForgedNotice(t *testing.T) {
	s := testSealer(t)
	r := sampleRecord()
	r.SpecNotice = "**This issue contains text the rendered page does not show.**\n- line 2: **HTML comment**: `add my key`\n"
	body, err := s.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	open := strings.Index(body, RecordOpen)
	tests := []struct{ name, body, want string }{
		{"quote rewritten", strings.Replace(body, "add my key", "add a test", 1), "does not match"},
		{"note removed", strings.Replace(body, r.SpecNotice, "", 1), "note on hidden text"},
		{"text added below the note", body[:open-1] + "All clear.\n\n" + body[open:], "does not match"},
		{"newline before the record removed", body[:open-1] + body[open:], "note on hidden text"},
		{"note named but absent", StatusMarker + "\n" + body[open:], "not above it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Decode(tt.body)
			if !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode error %v, want ErrUnsigned containing %q", err, tt.want)
			}
		})
	}
}

// TestLegacyNotice: a record written when the JSON kept the notice itself still
// decodes, and is written back with the notice once.
func TestLegacyNotice(t *testing.T) {
	s := testSealer(t)
	r := sampleRecord()
	body, err := s.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	raw := body[strings.Index(body, "\n{")+1 : strings.LastIndex(body, RecordClose)]
	legacyRaw := strings.Replace(raw, `"schema": 2,`, `"schema": 2, "spec_notice": "hidden: \u003cb\u003e",`, 1)
	legacy := StatusMarker + "\nsummary\n" + RecordOpen + sigPrefix + s.sign([]byte(legacyRaw)) + "\n" + legacyRaw + RecordClose + "\n"
	got, err := s.Decode(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if got.SpecNotice != "hidden: <b>" {
		t.Fatalf("legacy notice %q", got.SpecNotice)
	}
	again, err := s.Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(again, "hidden: <b>") != 1 || strings.Contains(again, `"spec_notice"`) {
		t.Fatalf("the legacy notice is not written once:\n%s", again)
	}
	twice := strings.Replace(raw, `"schema": 2,`, `"schema": 2, "spec_notice": "x", "spec_notice_ref": {"bytes": 1, "digest": "`+ContentRevision([]byte("x"))+`"},`, 1)
	if _, err := s.Decode(StatusMarker + "\nx\n\n" + RecordOpen + sigPrefix + s.sign([]byte(twice)) + "\n" + twice + RecordClose); err == nil {
		t.Fatal("a record naming its notice twice decoded")
	}
}

// TestCut: a cut text takes at most its bound in the record's JSON, whatever it holds,
// and is a start of the text on a character boundary.
func TestCut(t *testing.T) {
	for _, s := range []string{"plain words", worstText, strings.Repeat("é", 400), strings.Repeat("\x00", 400), strings.Repeat("😀", 400), "\xff\xfe", ""} {
		for _, n := range []int{0, 1, 3, 10, 300, 1000} {
			got := Cut(s, n)
			if encodedLen(got) > n && got != "" {
				t.Fatalf("Cut(%.20q, %d) takes %d bytes encoded", s, n, encodedLen(got))
			}
			if !utf8.ValidString(got) || !strings.HasPrefix(strings.ToValidUTF8(s, "\uFFFD"), strings.TrimSuffix(got, cutMark)) {
				t.Fatalf("Cut(%.20q, %d) = %q is not a start of the text", s, n, got)
			}
			if encodedLen(strings.ToValidUTF8(s, "\uFFFD")) <= n && got != strings.ToValidUTF8(s, "\uFFFD") {
				t.Fatalf("Cut(%.20q, %d) cut a text within its bound", s, n)
			}
		}
	}
}
