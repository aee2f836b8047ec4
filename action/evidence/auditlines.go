package evidence

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// ReadAuditLines reads a firewall audit log (JSON lines) into what the egress summary
// and the denied hosts need. It does not check the chain: the caller verifies the log
// first (firewall/audit.Verify), which this package does not import.
func ReadAuditLines(r io.Reader) ([]AuditEntry, error) {
	var out []AuditEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Kind      string    `json:"kind"`
			Target    string    `json:"target"`
			Allowed   bool      `json:"allowed"`
			Reason    string    `json:"reason"`
			BytesUp   int64     `json:"bytes_up"`
			BytesDown int64     `json:"bytes_down"`
			Denied    string    `json:"denied"`
			Time      time.Time `json:"time"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("failed to read an audit line: %w", err)
		}
		out = append(out, AuditEntry{Kind: line.Kind, Target: line.Target, Allowed: line.Allowed, Reason: line.Reason,
			BytesUp: line.BytesUp, BytesDown: line.BytesDown, Denied: line.Denied, Time: line.Time})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read the audit log: %w", err)
	}
	return out, nil
}
