package evidencemd

import "github.com/bumperdev/bumper/action/evidence"

// QuotedBytes renders e within limit, as Render does, and says how many bytes of the
// bundle's texts it read to quote them.
func QuotedBytes(e *evidence.Evidence, limit int) int {
	r := newRenderer(e, limit)
	r.render(limit)
	return r.q.read
}
