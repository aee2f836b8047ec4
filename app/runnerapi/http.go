package runnerapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/internal/attest"
)

// maxBody bounds request bodies; call-backs are small.
const maxBody = 1 << 20

// Ledger is what the endpoints act on: the App's work items. A *workitem.Refusal from it
// is answered 403 with its reason; any other error is the App's and answered 500.
type Ledger interface {
	Exchange(ctx context.Context, id workitem.Identity, req wire.ExchangeRequest) (wire.ExchangeResponse, error)
	Progress(ctx context.Context, c wire.RunClaims, p wire.Progress) error
	Waiting(ctx context.Context, c wire.RunClaims, w wire.Waiting) error
	ReportEvidence(ctx context.Context, c wire.RunClaims, e wire.Evidence) (workitem.Attestable, error)
	PublishAttestation(ctx context.Context, c wire.RunClaims, head string, statement []byte) error
	Verdict(ctx context.Context, c wire.RunClaims, v wire.Verdict) error
	ShouldStop(ctx context.Context, c wire.RunClaims) (wire.ShouldStop, error)
	Refresh(ctx context.Context, c wire.RunClaims) error
	Task(ctx context.Context, c wire.RunClaims) (wire.Task, error)
}

// Handler serves the token exchange and the run call-backs.
type Handler struct {
	verifier *Verifier
	tokens   *RunTokens
	ledger   Ledger
	observer Observer
	attester *Attester
}

// NewHandler wires the endpoints.
func NewHandler(v *Verifier, t *RunTokens, l Ledger) *Handler {
	return &Handler{verifier: v, tokens: t, ledger: l, observer: nopObserver{}}
}

// Register adds the endpoints to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST "+wire.PathTokenExchange, h.exchange)
	mux.HandleFunc("POST "+wire.PathProgress, h.callback(wire.ScopeProgress, report(h.ledger.Progress)))
	mux.HandleFunc("POST "+wire.PathWaiting, h.callback(wire.ScopeWaiting, report(h.ledger.Waiting)))
	mux.HandleFunc("POST "+wire.PathEvidence, h.callback(wire.ScopeEvidence, h.evidence))
	mux.HandleFunc("GET "+attest.KeyPath, h.publicKeys)
	mux.HandleFunc("POST "+wire.PathVerdict, h.callback(wire.ScopeVerdict, report(h.ledger.Verdict)))
	mux.HandleFunc("GET "+wire.PathShouldStop, h.callback(wire.ScopeShouldStop, func(ctx context.Context, c wire.RunClaims, _ []byte) (any, error) {
		return h.ledger.ShouldStop(ctx, c)
	}))
	mux.HandleFunc("POST "+wire.PathRefresh, h.callback(wire.ScopeShouldStop, h.refresh))
	mux.HandleFunc("GET "+wire.PathTask, h.callback(wire.ScopeTask, func(ctx context.Context, c wire.RunClaims, _ []byte) (any, error) {
		return h.ledger.Task(ctx, c)
	}))
}

// report adapts a call-back that takes a JSON body of type T and answers nothing.
func report[T any](act func(context.Context, wire.RunClaims, T) error) func(context.Context, wire.RunClaims, []byte) (any, error) {
	return func(ctx context.Context, c wire.RunClaims, body []byte) (any, error) {
		var v T
		if err := decode(body, &v); err != nil {
			return nil, err
		}
		return nil, act(ctx, c, v)
	}
}

// errBadRequest marks a body that does not parse.
var errBadRequest = errors.New("bad request")

func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	return nil
}

func (h *Handler) exchange(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	log := zerolog.Ctx(ctx).With().Str(logkey.Endpoint, wire.PathTokenExchange).Logger()
	ctx = log.WithContext(ctx)
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		h.observer.TokenExchange(OutcomeRefused, string(workitem.RefusalBadRequest))
		writeError(w, http.StatusBadRequest, "failed to read the request body")
		return
	}
	var req wire.ExchangeRequest
	if err := decode(body, &req); err != nil {
		h.observer.TokenExchange(OutcomeRefused, string(workitem.RefusalBadRequest))
		writeError(w, http.StatusBadRequest, err.Error()+"; send {\"oidc_token\", \"nonce\", \"work_item\", \"attempt\"}")
		return
	}
	id, err := h.verifier.Verify(ctx, req.OIDCToken)
	if err != nil {
		h.exchangeRefused(ctx, w, req.WorkItem, "", workitem.Refuse(workitem.RefusalOIDC, "%v", err))
		return
	}
	resp, err := h.ledger.Exchange(ctx, id, req)
	var ref *workitem.Refusal
	switch {
	case errors.As(err, &ref):
		h.exchangeRefused(ctx, w, req.WorkItem, id.RunID, ref)
		return
	case err != nil:
		h.observer.TokenExchange(OutcomeFailed, "")
		log.Error().Err(err).Msg("token exchange failed")
		writeError(w, http.StatusInternalServerError, "the token exchange failed; try again")
		return
	}
	h.observer.TokenExchange(OutcomeGranted, "")
	log.Info().Str(logkey.Audit, "token-exchange-granted").Str(logkey.WorkItem, resp.WorkItem.String()).
		Str(logkey.RunID, id.RunID).Int(logkey.Attempt, resp.Attempt).Msg("granted run credentials")
	writeJSON(w, http.StatusOK, resp)
}

// refresh signs a new run token with the same claims while the run may go on
// (workitem.Service.Refresh says when). Any run may ask: every stage's token has
// should-stop in its scope.
func (h *Handler) refresh(ctx context.Context, c wire.RunClaims, _ []byte) (any, error) {
	if err := h.ledger.Refresh(ctx, c); err != nil {
		return nil, err
	}
	c.RegisteredClaims = jwt.RegisteredClaims{}
	tok, exp, err := h.tokens.Sign(c)
	if err != nil {
		return nil, err
	}
	return wire.Refresh{RunToken: tok, RunTokenExpiresAt: exp}, nil
}

// exchangeRefused answers a refused token exchange, counted under the refusal's kind.
func (h *Handler) exchangeRefused(ctx context.Context, w http.ResponseWriter, item, runID string, ref *workitem.Refusal) {
	h.observer.TokenExchange(OutcomeRefused, string(ref.Kind()))
	h.refuse(ctx, w, item, runID, ref)
}

// refuse audits a refusal and answers it 403 with its reason.
func (h *Handler) refuse(ctx context.Context, w http.ResponseWriter, item, runID string, ref *workitem.Refusal) {
	zerolog.Ctx(ctx).Warn().Str(logkey.Audit, "refused").Str(logkey.WorkItem, item).
		Str(logkey.RunID, runID).Str(logkey.Reason, ref.Reason()).Msg("refused a runner request")
	writeError(w, http.StatusForbidden, ref.Reason())
}

// callback serves a run call-back for tokens whose scope holds scope.
func (h *Handler) callback(scope string, fn func(ctx context.Context, c wire.RunClaims, body []byte) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		log := zerolog.Ctx(ctx).With().Str(logkey.Endpoint, r.URL.Path).Logger()
		ctx = log.WithContext(ctx)
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			h.refuse(ctx, w, "", "", workitem.Refuse(workitem.RefusalRunToken, "a run token is required (Authorization: Bearer <run token>)"))
			return
		}
		claims, err := h.tokens.Verify(raw)
		if err != nil {
			h.refuse(ctx, w, "", "", workitem.Refuse(workitem.RefusalRunToken, "%v", err))
			return
		}
		if !slices.Contains(claims.Scope, scope) {
			h.refuse(ctx, w, claims.WorkItem.String(), "", workitem.Refuse(workitem.RefusalStage, "a %s run's token does not allow %s (its scope: %s)",
				claims.Stage, r.URL.Path, strings.Join(claims.Scope, ", ")))
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			writeError(w, http.StatusBadRequest, "failed to read the request body")
			return
		}
		out, err := fn(ctx, claims, body)
		var ref *workitem.Refusal
		switch {
		case errors.As(err, &ref):
			h.refuse(ctx, w, claims.WorkItem.String(), "", ref)
		case errors.Is(err, errBadRequest):
			writeError(w, http.StatusBadRequest, err.Error())
		case err != nil:
			log.Error().Err(err).Msg("run call-back failed")
			writeError(w, http.StatusInternalServerError, "the call-back failed; try again")
		case out == nil:
			w.WriteHeader(http.StatusNoContent)
		default:
			writeJSON(w, http.StatusOK, out)
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, wire.Error{Error: msg})
}
