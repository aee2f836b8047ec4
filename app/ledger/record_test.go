package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/wire"
)

func sampleRecord() *Record {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := &Record{Schema: SchemaVersion, Revision: 3, Repository: "acme/widgets", Issue: 7,
		State: Running, Requester: "maintainer", SpecRevision: SpecRevision("Fix it", "Make widgets 4."),
		BaseBranch: "main", BaseCommit: strings.Repeat("a", 40), PlanRevision: ContentRevision([]byte("plan")),
		PolicyVersion: "default", PullRequest: 0, AuditHead: "sha256:feed", UpdatedAt: at}
	r.Approvals = []Approval{{Approval: wire.Approval{By: "maintainer", At: at, Revision: r.ApprovalRevision(), CommentID: 42}}}
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
