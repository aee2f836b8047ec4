package ghemu

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// docsURL is where GitHub's error bodies point; the emulator keeps the shape.
const docsURL = "https://docs.github.com/rest"

// apiError is an error with GitHub's JSON shape. Handlers return it and the dispatcher
// writes it, so every refusal looks like GitHub's.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	// Errors holds apiErrorDetail objects ("Validation Failed") or plain strings (the
	// "Unprocessable Entity" form some operations answer, e.g. review comments).
	Errors []any  `json:"errors,omitempty"`
	Docs   string `json:"documentation_url"`
	Code   string `json:"status"`
}

// apiErrorDetail is one entry of a 422's "errors" array.
type apiErrorDetail struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

func newError(status int, msg string) *apiError {
	return &apiError{Status: status, Message: msg, Docs: docsURL, Code: strconv.Itoa(status)}
}

func errNotFound() *apiError { return newError(http.StatusNotFound, "Not Found") }

func errBadCredentials() *apiError { return newError(http.StatusUnauthorized, "Bad credentials") }

func errRequiresAuth() *apiError {
	return newError(http.StatusUnauthorized, "Requires authentication")
}

func errNotAccessible() *apiError {
	return newError(http.StatusForbidden, "Resource not accessible by integration")
}

// errNotAnApp is GitHub's answer to a person's token on an App-only operation
// (creating or updating a check run).
func errNotAnApp() *apiError {
	e := newError(http.StatusForbidden, "You must authenticate via a GitHub App.")
	e.Docs = "https://docs.github.com/rest/checks/runs#create-a-check-run"
	return e
}

func errBadJSON(detail string) *apiError {
	return newError(http.StatusBadRequest, "Problems parsing JSON: "+detail)
}

// errValidation is GitHub's 422 "Validation Failed" with one detail.
func errValidation(resource, field, code, msg string) *apiError {
	e := newError(http.StatusUnprocessableEntity, "Validation Failed")
	e.Errors = []any{apiErrorDetail{Resource: resource, Field: field, Code: code, Message: msg}}
	return e
}

// errUnprocessable is a 422 with a plain message, as GitHub sends for refused state
// changes ("Reference already exists", "Pull Request is not mergeable").
func errUnprocessable(msg string) *apiError {
	return newError(http.StatusUnprocessableEntity, msg)
}

// errUnprocessableList is GitHub's 422 whose errors are plain strings, as the review
// routes answer: {"message": "Unprocessable Entity", "errors": ["Line could not be resolved"]}.
func errUnprocessableList(msgs ...string) *apiError {
	e := newError(http.StatusUnprocessableEntity, "Unprocessable Entity")
	for _, m := range msgs {
		e.Errors = append(e.Errors, m)
	}
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if v == nil {
		return
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = newError(http.StatusInternalServerError, "Server Error: "+err.Error())
	}
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
	}
	writeJSON(w, ae.Status, ae)
}
