package ledger

import (
	"strings"
	"testing"
	"time"
)

func sampleRecord() *Record {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := &Record{Schema: SchemaVersion, Revision: 3, Repository: "acme/widgets", Issue: 7,
		State: Running, Requester: "maintainer", SpecRevision: SpecRevision("Fix it", "Make widgets 4."),
		BaseBranch: "main", BaseCommit: strings.Repeat("a", 40), PlanRevision: ContentRevision([]byte("plan")),
		PolicyVersion: "default", PullRequest: 0, AuditHead: "sha256:feed", UpdatedAt: at}
	r.Approvals = []Approval{{By: "maintainer", At: at, Revision: r.ApprovalRevision(), CommentID: 42}}
	r.Attempts = []Attempt{{Number: 1, Stage: "implement", Revision: r.ApprovalRevision(),
		NonceHash: "sha256:abcd", RunID: 99, Runner: "r1", ImageDigest: "sha256:img", StartedAt: at,
		Outcome: "", CostMicroUSD: 1200, EvidenceDigest: "sha256:ev"}}
	return r
}

func TestSpecRevision(t *testing.T) {
	base := SpecRevision("Fix it", "body")
	tests := []struct {
		name        string
		title, body string
		same        bool
	}{
		{"identical", "Fix it", "body", true},
		{"crlf is not an edit", "Fix it", "body", true},
		{"body edit", "Fix it", "body!", false},
		{"title edit", "Fix it!", "body", false},
		{"text moved between title and body", "Fix itbody", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SpecRevision(tt.title, tt.body) == base; got != tt.same {
				t.Fatalf("same=%v, want %v", got, tt.same)
			}
		})
	}
	if SpecRevision("a", "x\r\ny") != SpecRevision("a", "x\ny") {
		t.Fatal("CRLF changed the spec revision")
	}
	if !IsRevision(base) || len(base) != len("sha256:")+64 {
		t.Fatalf("spec revision %q is not a full-length SHA-256", base)
	}
}

// TestRevisionsAreFullLength: two bodies whose SHA-256 share their first 64 bits (as an
// attacker can make them, differing only in an HTML comment) must not share a revision.
// Two inputs with a common prefix are simulated by comparing the full values.
func TestRevisionsAreFullLength(t *testing.T) {
	a, b := ContentRevision([]byte("x")), ContentRevision([]byte("y"))
	for _, r := range []string{a, b, SpecRevision("t", "b"), sampleRecord().ApprovalRevision(), sampleRecord().TextRevision()} {
		if !IsRevision(r) {
			t.Fatalf("%q is not a full-length revision", r)
		}
	}
	for _, bad := range []string{"sha256:0123456789abcdef", "sha256:" + strings.Repeat("g", 64), "md5:" + strings.Repeat("0", 64), ""} {
		if IsRevision(bad) {
			t.Fatalf("IsRevision(%q) is true", bad)
		}
	}
}

func TestApprovalBinding(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *Record)
	}{
		{"spec edited", func(r *Record) { r.SpecRevision = SpecRevision("Fix it", "other") }},
		{"plan changed", func(r *Record) { r.PlanRevision = ContentRevision([]byte("other plan")) }},
		{"base moved", func(r *Record) { r.BaseCommit = strings.Repeat("b", 40) }},
		{"policy changed", func(r *Record) { r.PolicyVersion = ContentRevision([]byte("version: 1\nplan: true\n")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sampleRecord()
			if r.ActiveApproval() == nil {
				t.Fatal("the sample's approval does not hold")
			}
			tt.change(r)
			if r.ActiveApproval() != nil {
				t.Fatal("the approval still holds after the change")
			}
		})
	}
	r := sampleRecord()
	if !r.VoidApprovals("edited") || r.ActiveApproval() != nil {
		t.Fatal("VoidApprovals left an approval holding")
	}
	if r.VoidApprovals("again") {
		t.Fatal("VoidApprovals reported voiding already void approvals")
	}
}

func TestCloneIsDeep(t *testing.T) {
	r := sampleRecord()
	c := r.Clone()
	c.Approvals[0].By = "someone"
	c.Attempts[0].Outcome = "failure"
	if r.Approvals[0].By != "maintainer" || r.Attempts[0].Outcome != "" {
		t.Fatal("Clone shares slices with the original")
	}
}

// TestLargestRecordFits: the largest record a work item can reach (MaxAttempts runs of
// every stage, every field at its largest, the runner's reasons escaped at worst) fits
// in one GitHub comment once compacted.
func TestLargestRecordFits(t *testing.T) {
	s, err := NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	rev := ContentRevision([]byte("x"))
	worst := strings.Repeat("<", 300) + "…" // cutReason's bound; "<" is escaped to 6 bytes
	// What the App writes itself (void reasons, notices) is its own plain text, a line or two.
	own := strings.Repeat("a", 300)
	r := &Record{Schema: SchemaVersion, Revision: 1 << 40, Repository: strings.Repeat("o", 39) + "/" + strings.Repeat("r", 100),
		Issue: 1 << 30, State: InReview, Requester: strings.Repeat("u", 39), SpecRevision: rev, PlanRevision: rev,
		BaseBranch: strings.Repeat("b", 255), BaseCommit: strings.Repeat("c", 40), PolicyVersion: rev, PullRequest: 1 << 30,
		WorkBranch: strings.Repeat("w", 40), PullHead: strings.Repeat("h", 40), AuditHead: rev, Reason: worst,
		Protection: own + own, SpecNotice: own,
		Verdict: &Verdict{Attempt: 99, Head: strings.Repeat("h", 40), Verdict: "request_changes", Confidence: 0.123456789,
			Findings: 50, Digest: rev, Problem: worst, CheckRunID: 1 << 50, ReviewID: 1 << 50},
		HumanPush: &HumanPush{By: strings.Repeat("u", 39), At: time.Now(), Head: strings.Repeat("h", 40)}}
	for range 20 {
		r.Approvals = append(r.Approvals, Approval{By: strings.Repeat("u", 39), At: time.Now(), Revision: rev, CommentID: 1 << 50, Voided: own})
	}
	var stages []string
	for len(stages) < MaxAttempts {
		stages = append(stages, "implement", "review", "fix", "review")
	}
	for i, st := range stages[:MaxAttempts] {
		r.Attempts = append(r.Attempts, Attempt{Number: i + 1, Stage: st, Revision: rev, NonceHash: rev, NonceUsed: true,
			RunID: 1 << 50, Runner: strings.Repeat("n", 100), ImageDigest: rev, StartedAt: time.Now(), EndedAt: time.Now(),
			Outcome: "dispatch-failed", CostMicroUSD: 1 << 50, EvidenceDigest: rev, HeadCommit: strings.Repeat("h", 40),
			RunOutcome: "over_budget", RunReason: worst, FixChecks: []string{strings.Repeat("k", 100), strings.Repeat("k", 100)}})
	}
	for range 16 {
		r.NoteDelivery(strings.Repeat("d", 36) + string(rune('a'+len(r.Deliveries))))
	}
	r.Compact()
	body, err := s.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(body)); n > 65536 {
		t.Fatalf("the largest compacted record takes %d characters; a GitHub comment holds 65536", n)
	}
	t.Logf("%d attempts: %d characters", len(r.Attempts), len([]rune(body)))
}
