package fidelity

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/rs/zerolog"
)

// Phase says which half of an exchange a Mismatch is about.
type Phase string

// The phases of an exchange.
const (
	PhaseRequest  Phase = "request"
	PhaseResponse Phase = "response"
)

// Mismatch is one way an exchange differs from GitHub's description.
type Mismatch struct {
	Method      string
	Path        string // the request path as served, e.g. /repos/o/r/issues/1
	Route       string // the description's path template; empty if the route is unknown
	OperationID string // e.g. "issues/get"; empty if the route is unknown
	Phase       Phase
	Status      int // the response status; 0 for a request mismatch
	Message     string
}

func (m Mismatch) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", m.Method, m.Path)
	if m.OperationID != "" {
		fmt.Fprintf(&b, " (%s)", m.OperationID)
	}
	fmt.Fprintf(&b, ": %s", m.Phase)
	if m.Status != 0 {
		fmt.Fprintf(&b, " %d", m.Status)
	}
	fmt.Fprintf(&b, ": %s", m.Message)
	return b.String()
}

// Log keys of the mismatch log line.
const (
	logKeyMethod    = "method"
	logKeyPath      = "path"
	logKeyOperation = "operation"
	logKeyPhase     = "phase"
	logKeyStatus    = "status"
)

// Middleware checks every request next serves, and every response it returns, against
// the description, and calls report once for each mismatch (from the request's
// goroutine, after next returns). The client gets next's response unchanged: it is
// copied as it is written, not held back. Requests that Skip declares are passed through
// unchecked.
func (o *OpenAPI) Middleware(next http.Handler, report func(Mismatch)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.skip != nil && o.skip(r) {
			next.ServeHTTP(w, r)
			return
		}
		emit := func(m Mismatch) {
			zerolog.Ctx(r.Context()).Warn().Str(logKeyMethod, m.Method).Str(logKeyPath, m.Path).
				Str(logKeyOperation, m.OperationID).Str(logKeyPhase, string(m.Phase)).
				Int(logKeyStatus, m.Status).Msg(m.Message)
			report(m)
		}

		var body []byte
		if r.Body != nil {
			var err error
			if body, err = io.ReadAll(r.Body); err != nil {
				emit(Mismatch{Method: r.Method, Path: r.URL.Path, Phase: PhaseRequest,
					Message: fmt.Sprintf("failed to read the request body: %v", err)})
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}

		base := Mismatch{Method: r.Method, Path: r.URL.Path}
		route, params, err := o.router.findRoute(r)
		var input *openapi3filter.RequestValidationInput
		if err != nil {
			m := base
			m.Phase, m.Message = PhaseRequest, err.Error()
			emit(m)
		} else {
			base.Route, base.OperationID = route.Path, route.Operation.OperationID
			input = o.requestInput(r, body, route, params)
			for _, msg := range o.checkRequest(input) {
				m := base
				m.Phase, m.Message = PhaseRequest, msg
				emit(m)
			}
		}

		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if input == nil || (o.skipResponse != nil && o.skipResponse(r, rec.statusCode())) {
			return
		}
		if r.Context().Err() != nil {
			// The client went away (a process killed mid-request): whatever the handler
			// made of its cancelled work reached no one, and GitHub's description says
			// nothing of an answer nobody read.
			return
		}
		if rec.header == nil {
			// The handler wrote nothing: net/http sends 200 with the header as it stands.
			rec.header = w.Header().Clone()
		}
		for _, msg := range o.checkResponse(input, rec) {
			m := base
			m.Phase, m.Status, m.Message = PhaseResponse, rec.statusCode(), msg
			emit(m)
		}
	})
}

// requestInput builds the validator's view of the request on its own copy of the body,
// so that nothing the validator does can reach the handler.
func (o *OpenAPI) requestInput(r *http.Request, body []byte, route *routers.Route, params map[string]string) *openapi3filter.RequestValidationInput {
	vr := r.Clone(r.Context())
	vr.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) == 0 {
		vr.Body = http.NoBody
	}
	return &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route, Options: o.filter}
}

func (o *OpenAPI) checkRequest(input *openapi3filter.RequestValidationInput) []string {
	err := openapi3filter.ValidateRequest(input.Request.Context(), input)
	return splitErrors(err)
}

// kinSkips are the statuses whose responses kin-openapi's ValidateResponse accepts
// without looking at them; this package checks at least that they are declared.
var kinSkips = []int{http.StatusNotModified, http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect}

func (o *OpenAPI) checkResponse(input *openapi3filter.RequestValidationInput, rec *recorder) []string {
	status := rec.statusCode()
	responses := input.Route.Operation.Responses
	declared := responses.Status(status) != nil || responses.Default() != nil
	var problems []string

	if !declared {
		generic, isGeneric := genericErrors[status]
		switch {
		case status == http.StatusNotModified && isConditional(input.Request):
			// GitHub answers any conditional GET with 304 when the ETag or date still
			// matches, whether or not the description lists 304 for that operation
			// (many GETs omit it); HTTP allows it on every GET (RFC 9110, 15.4.5).
		case isGeneric:
			// Checked against the description's own response for that error.
			input = withResponse(input, status, input.Route.Spec.Components.Responses[generic])
			responses = input.Route.Operation.Responses
		default:
			return []string{fmt.Sprintf("status %d is not one GitHub's description declares for %s (declared: %s)",
				status, input.Route.Operation.OperationID, declaredStatuses(input))}
		}
	}
	ref := responses.Status(status)
	switch {
	case rec.body.Len() == 0:
	case noBodyStatus(status):
		problems = append(problems, fmt.Sprintf("status %d carries no body, but the handler wrote %d bytes", status, rec.body.Len()))
	case ref != nil && ref.Value != nil && len(ref.Value.Content) == 0:
		problems = append(problems, fmt.Sprintf("GitHub's description gives status %d no body, but the handler wrote %d bytes", status, rec.body.Len()))
	}
	if slices.Contains(kinSkips, status) || input.Request.Method == http.MethodHead {
		return problems
	}

	rin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: input,
		Status:                 status,
		Header:                 rec.header,
		Options:                o.filter,
	}
	rin.SetBodyBytes(rec.body.Bytes())
	return append(problems, splitErrors(openapi3filter.ValidateResponse(input.Request.Context(), rin))...)
}

// genericErrors are the statuses GitHub answers on any operation, declared or not
// (its REST documentation describes them once for the whole API: bad JSON, bad
// credentials, a token without the permission, a resource the caller cannot see, invalid
// fields), each with the description's component response that gives its body. The
// description lists them for some operations only; an undeclared one is checked against
// that component response instead of being refused. Any other undeclared status (409,
// 410, 429, 5xx, another 2xx) is a mismatch.
var genericErrors = map[int]string{
	http.StatusBadRequest:          "bad_request",
	http.StatusUnauthorized:        "requires_authentication",
	http.StatusForbidden:           "forbidden",
	http.StatusNotFound:            "not_found",
	http.StatusUnprocessableEntity: "validation_failed",
}

// withResponse returns a copy of input whose operation declares ref for status.
func withResponse(input *openapi3filter.RequestValidationInput, status int, ref *openapi3.ResponseRef) *openapi3filter.RequestValidationInput {
	op := *input.Route.Operation
	op.Responses = openapi3.NewResponses(openapi3.WithStatus(status, ref))
	route := *input.Route
	route.Operation = &op
	in := *input
	in.Route = &route
	return &in
}

func isConditional(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "")
}

func noBodyStatus(status int) bool {
	return status == http.StatusNoContent || status == http.StatusNotModified || (status >= 100 && status < 200)
}

func declaredStatuses(input *openapi3filter.RequestValidationInput) string {
	var codes []string
	for code := range input.Route.Operation.Responses.Map() {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return strings.Join(codes, ", ")
}

// splitErrors turns a validator error into one message per problem.
func splitErrors(err error) []string {
	if err == nil {
		return nil
	}
	var multi interface{ Unwrap() []error }
	if errors.As(err, &multi) {
		var out []string
		for _, e := range multi.Unwrap() {
			out = append(out, splitErrors(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

// recorder passes a response through to the client and keeps a copy for validation.
type recorder struct {
	http.ResponseWriter
	status int
	header http.Header // snapshot when the header was written
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		r.header = r.ResponseWriter.Header().Clone()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	r.body.Write(p)
	return r.ResponseWriter.Write(p)
}

// Flush lets streaming handlers flush through the recorder.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
