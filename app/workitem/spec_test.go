package workitem

import (
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/reveal"
)

// hostileIssues are issues written to make the note on hidden text as long as it gets,
// with the characters that take the most room: each as a title and a body of GitHub's
// largest (256 and 65536 characters).
var hostileIssues = []struct{ title, body string }{
	{"Count to 4", strings.Repeat("<!--"+strings.Repeat("<", 352)+"-->\n", 40)},
	{strings.Repeat("\u202e<!--", 51), strings.Repeat("<!--"+strings.Repeat("&", 412)+"-->\n", 156)},
	{strings.Repeat("\U000E0041", 256), strings.Repeat("\U000E0041\u200b", 65536/2)},
	{"x", strings.Repeat("<details><summary>"+strings.Repeat("`", 90)+"</summary>"+strings.Repeat("<\u202e", 190)+"</details>\n", 65536/520)},
	{"x", strings.Repeat("[a](https://e.example/"+strings.Repeat("%3C", 60)+" \""+strings.Repeat("<", 150)+"\") ![<](x \"<<\")\n[u]: /x\n[^f]: y\n", 65536/420)},
	{"x", strings.Repeat("```mermaid\n%%"+strings.Repeat("<", 300)+"\n```\n$\\phantom{"+strings.Repeat("<", 100)+"}$\n```geojson\n<<<\n```\n", 65536/540)},
}

// TestNoticeFitsTheStatusComment: for an issue made to make it long, the note on hidden
// text stays within what the status comment keeps whole, and the comment, with the
// note, within what GitHub takes (ledger TestLargestRecordFits holds the rest of the
// record at its largest).
func TestNoticeFitsTheStatusComment(t *testing.T) {
	if reveal.MaxRenderLen >= ledger.MaxNotice {
		t.Fatalf("reveal.MaxRenderLen %d: the status comment keeps notes of at most %d bytes", reveal.MaxRenderLen, ledger.MaxNotice)
	}
	for i, is := range hostileIssues {
		if len([]rune(is.title)) > 256 || len([]rune(is.body)) > 65536 {
			t.Fatalf("issue %d is larger than GitHub takes", i)
		}
		checkNotice(t, is.title, is.body)
	}
}

// FuzzNoticeFits is TestNoticeFitsTheStatusComment for any title and body.
func FuzzNoticeFits(f *testing.F) {
	for _, is := range hostileIssues {
		f.Add(is.title, is.body)
	}
	f.Fuzz(checkNotice)
}

func checkNotice(t *testing.T, title, body string) {
	s, err := ledger.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &ledger.Record{Schema: ledger.SchemaVersion, Revision: 1, Repository: "acme/widgets", Issue: 1,
		State: ledger.AwaitingApproval, Requester: "reader", BaseBranch: "main", BaseCommit: strings.Repeat("c", 40),
		PolicyVersion: ledger.DefaultPolicyVersion, Approvals: []ledger.Approval{}, Attempts: []ledger.Attempt{}, UpdatedAt: time.Now()}
	setSpec(rec, title, body)
	if len(rec.SpecNotice) > ledger.MaxNotice {
		t.Fatalf("a note of %d bytes; the status comment keeps %d", len(rec.SpecNotice), ledger.MaxNotice)
	}
	comment, err := s.Encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(comment) > ledger.MaxCommentBytes || !strings.Contains(comment, rec.SpecNotice) {
		t.Fatalf("a status comment of %d bytes, note kept whole: %v", len(comment), strings.Contains(comment, rec.SpecNotice))
	}
}
