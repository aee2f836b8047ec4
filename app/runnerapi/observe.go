package runnerapi

// Observer learns how each token exchange ended, for serve's metrics. outcome is
// "granted", "refused" or "failed"; reason is a refusal's kind (workitem.Refusal.Kind,
// or workitem.RefusalBadRequest and workitem.RefusalOIDC for what this layer refuses
// itself), empty otherwise. Never the refusal's text: that would make a label without
// bounds.
type Observer interface {
	TokenExchange(outcome, reason string)
}

// The outcomes an exchange reports to the Observer.
const (
	OutcomeGranted = "granted"
	OutcomeRefused = "refused"
	OutcomeFailed  = "failed"
)

type nopObserver struct{}

func (nopObserver) TokenExchange(string, string) {}

// WithObserver sets who learns each exchange's outcome; nil: nobody.
func (h *Handler) WithObserver(o Observer) *Handler {
	if o == nil {
		o = nopObserver{}
	}
	h.observer = o
	return h
}
