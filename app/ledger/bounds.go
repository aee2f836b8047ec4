package ledger

import (
	"encoding/json"
	"errors"
	"strings"
)

// MaxCommentBytes bounds the status comment. GitHub refuses a comment of more than 65536
// characters (422); a character is never fewer than one byte, nor than one UTF-16 unit,
// so a comment of at most this many bytes fits however GitHub counts.
const MaxCommentBytes = 65536

// ErrTooLong is returned by Encode for a record whose status comment would pass
// MaxCommentBytes even with the short note on hidden text.
var ErrTooLong = errors.New("the status comment would be longer than a GitHub comment may be")

// The record must stay within one GitHub comment whatever the issue holds and however
// many runs its item had: at most MaxAttempts attempts, of which the last KeptDetail keep
// every field, earlier ones what the evidence and the bounds need (stage, revision, run,
// times, outcome, cost, evidence digest, head commit); at most KeptApprovals approvals
// that no longer hold; and every free text within its bound, in bytes of its JSON
// encoding (a "<" takes six bytes there, so a bound before encoding is none).
// TestLargestRecordFits puts every field at its largest.
const (
	MaxAttempts   = 40
	KeptDetail    = 8
	KeptApprovals = 20
	// MaxReason bounds Reason and Protection: what the App says, with what it quotes.
	MaxReason = 1000
	// MaxDetail bounds each attempt's RunReason, the verdict's Problem and each
	// approval's Voided.
	MaxDetail = 300
	// MaxNotice bounds SpecNotice in the status comment; a longer one is replaced by a
	// short note that says the issue hides more than the comment can list.
	MaxNotice = 12 << 10
)

// Compact brings the record within its bounds before it is written: it drops the
// details of all but the last KeptDetail attempts (the runner's reason, the runner's
// name, the image, the nonce's hash, spent, and the fix round's checks), all but the
// last KeptApprovals approvals that no longer hold, and cuts every free text to its
// bound. Of the inputs a revise round answers, only the latest attempt's are kept.
func (r *Record) Compact() {
	for i := 0; i < len(r.Attempts)-KeptDetail; i++ {
		a := &r.Attempts[i]
		a.RunReason, a.Runner, a.ImageDigest, a.NonceHash, a.FixChecks, a.UpdateTo = "", "", "", "", nil, ""
	}
	// Only the latest attempt's task is ever built again.
	for i := 0; i < len(r.Attempts)-1; i++ {
		r.Attempts[i].Inputs = nil
	}
	voided := 0
	for _, a := range r.Approvals {
		if a.Voided != "" {
			voided++
		}
	}
	kept := r.Approvals[:0]
	for _, a := range r.Approvals {
		if a.Voided != "" && voided > KeptApprovals {
			voided--
			continue
		}
		a.Voided = Cut(a.Voided, MaxDetail)
		kept = append(kept, a)
	}
	r.Approvals = kept
	for i := range r.Attempts {
		r.Attempts[i].RunReason = Cut(r.Attempts[i].RunReason, MaxDetail)
	}
	if r.Verdict != nil {
		r.Verdict.Problem = Cut(r.Verdict.Problem, MaxDetail)
	}
	r.Reason, r.Protection = Cut(r.Reason, MaxReason), Cut(r.Protection, MaxReason)
}

// cutMark marks a cut text; it takes three bytes in the JSON too.
const cutMark = "…"

// Cut keeps the longest start of s (as valid UTF-8, on a character boundary) whose
// encoding in the record's JSON takes at most n bytes, cut marked with "…" (counted).
func Cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if encodedLen(s) <= n {
		return s
	}
	used, budget := 0, n-len(cutMark)
	for i, r := range s {
		w := encodedLen(string(r))
		if used+w > budget {
			if budget < 0 {
				return ""
			}
			return s[:i] + cutMark
		}
		used += w
	}
	return s
}

// encodedLen is how many bytes s takes inside a JSON string as the record is encoded.
func encodedLen(s string) int {
	b, err := json.Marshal(s)
	if err != nil {
		// A string always encodes; were it not so, count it at the worst.
		return 6 * len(s)
	}
	return len(b) - 2
}
