package audit

import (
	"encoding/json"
	"fmt"
	"io"
)

// Refused returns the last max lines of a log that record a refusal ("allowed":false),
// verbatim: what an error quotes so its reader sees the firewall's own words (the
// target, the address, the reason) without opening the log. A line that is not a JSON
// object is an error; the chain is not checked here (Verify does that).
func Refused(r io.Reader, max int) ([]string, error) {
	var out []string
	err := readLines(r, func(n uint64, line []byte) error {
		var e struct {
			Allowed *bool `json:"allowed"`
		}
		if err := json.Unmarshal(line, &e); err != nil || e.Allowed == nil {
			return &VerifyError{n, "not an audit entry"}
		}
		if !*e.Allowed {
			out = append(out, string(line))
			if len(out) > max {
				out = out[1:]
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to read the audit log's refusals: %w", err)
	}
	return out, nil
}
