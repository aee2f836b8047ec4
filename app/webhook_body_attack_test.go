package app

import (
	"io"
	"net/http"
	"testing"
)

// countingZeros is an endless body of zeros that counts what was read of it.
type countingZeros struct {
	n, limit int64
}

func (c *countingZeros) Read(p []byte) (int, error) {
	if c.n >= c.limit {
		return 0, io.EOF
	}
	k := min(int64(len(p)), c.limit-c.n)
	clear(p[:k])
	c.n += k
	return int(k), nil
}

// TestUnsignedWebhookBodyIsBounded: anyone who can reach serve's webhook path, with no
// secret, sends a body far larger than any GitHub sends (GitHub caps deliveries at
// 25 MB). The signature can only be checked over the whole body, so serve must stop
// reading past GitHub's cap rather than hold whatever it is sent in memory: a few such
// requests at once would exhaust the replica.
func TestUnsignedWebhookBodyIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	body := &countingZeros{limit: 96 << 20}
	req, err := http.NewRequest(http.MethodPost, h.hs.URL+h.cfg.Server.WebhookPath, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", "attacker")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", "sha256=00")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("an unsigned 96 MB delivery was answered %d", resp.StatusCode)
		}
	}
	if body.n > 40<<20 {
		t.Fatalf("serve read %d MB of an unsigned delivery before refusing it", body.n>>20)
	}
}
