package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// VerifyError says where the chain broke: Line is 1-based.
type VerifyError struct {
	Line   uint64
	Reason string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("audit log broken at line %d: %s", e.Line, e.Reason)
}

// Verify reads a whole log and checks every line's sequence number and previous-hash
// link. If wantHead is not empty, the hash of the last line must equal it: that is what
// detects an edited or dropped last line, which the chain alone cannot.
func Verify(r io.Reader, wantHead string) (Head, error) {
	h := Head{Hash: Genesis}
	err := readLines(r, func(n uint64, line []byte) error {
		var rec struct {
			Seq  *uint64 `json:"seq"`
			Prev *string `json:"prev"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return &VerifyError{n, fmt.Sprintf("not a JSON object: %v", err)}
		}
		if rec.Seq == nil || rec.Prev == nil {
			return &VerifyError{n, `missing "seq" or "prev"`}
		}
		if *rec.Prev != h.Hash {
			what := "the previous line was edited, dropped, or this line was inserted or moved"
			if n == 1 {
				what = "the first line does not start from the genesis value (lines dropped at the start?)"
			}
			return &VerifyError{n, fmt.Sprintf("prev is %.16s…, expected %.16s…: %s", *rec.Prev, h.Hash, what)}
		}
		if *rec.Seq != n {
			return &VerifyError{n, fmt.Sprintf("sequence number %d, expected %d", *rec.Seq, n)}
		}
		sum := sha256.Sum256(line)
		h.Hash = hex.EncodeToString(sum[:])
		h.Lines = n
		return nil
	})
	if err != nil {
		return h, err
	}
	if wantHead != "" && wantHead != h.Hash {
		return h, &VerifyError{h.Lines, fmt.Sprintf("last line hash %.16s… does not match the recorded head %.16s… (last lines edited or dropped)", h.Hash, wantHead)}
	}
	return h, nil
}
