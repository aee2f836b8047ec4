package ledger

import (
	"fmt"
	"strings"
)

// stored is the record as the status comment's JSON holds it. The note on hidden text
// (Record.SpecNotice) is the one part of the comment the text sizes: it is kept
// once, in the human part just above the record, and the JSON names it by length and
// digest, so that Decode reads it back from there and checks it under the signature.
type stored struct {
	*Record
	Notice *noticeRef `json:"spec_notice_ref,omitempty"`
	// Legacy is the notice as records kept it before spec_notice_ref, inside the JSON
	// (a second copy of it, with every "<" taking six bytes): read, never written.
	Legacy string `json:"spec_notice,omitempty"`
}

// noticeRef names the notice the human part ends with.
type noticeRef struct {
	Bytes  int    `json:"bytes"`
	Digest string `json:"digest"`
}

// overflowNotice replaces a notice too long for the status comment; it names no part of
// the issue, so its length is fixed.
const overflowNotice = "**This issue contains text the rendered page does not show**, more than this comment can list. " +
	"The agent will read all of it: read the issue's Markdown source (Edit) before you approve.\n"

// boundedNotice is the notice as the status comment shows it: no HTML comment marker
// (the record sits in an HTML comment), ending in a newline, and at most MaxNotice bytes,
// or else overflowNotice.
func boundedNotice(notice string) string {
	if notice == "" {
		return ""
	}
	notice = noMarkers(notice)
	if !strings.HasSuffix(notice, "\n") {
		notice += "\n"
	}
	if len(notice) > MaxNotice {
		return overflowNotice
	}
	return notice
}

// refOf names a bounded notice, nil for none.
func refOf(notice string) *noticeRef {
	if notice == "" {
		return nil
	}
	return &noticeRef{Bytes: len(notice), Digest: ContentRevision([]byte(notice))}
}

// readNotice finds the notice ref names at the end of the human part (the comment
// before the record, which ends with the notice and one more newline) and checks it.
func readNotice(human string, ref *noticeRef) (string, error) {
	end := len(human) - 1
	switch {
	case ref.Bytes < 1 || ref.Bytes > MaxNotice || !IsRevision(ref.Digest):
		return "", fmt.Errorf("status record's note on hidden text is named by %d bytes and digest %q: want 1 to %d bytes and a full-length revision",
			ref.Bytes, ref.Digest, MaxNotice)
	case end < ref.Bytes || human[end] != '\n':
		return "", fmt.Errorf("%w: the note on hidden text the record names is not above it", ErrUnsigned)
	}
	notice := human[end-ref.Bytes : end]
	if ContentRevision([]byte(notice)) != ref.Digest {
		return "", fmt.Errorf("%w: the note on hidden text above the record does not match the record's digest of it (edited by someone other than Bumper)", ErrUnsigned)
	}
	return notice, nil
}
