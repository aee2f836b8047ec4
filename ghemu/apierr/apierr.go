// Package apierr is GitHub's error object and the JSON it travels in, for every HTTP
// surface of the emulator (the REST API, the OIDC issuer, the control routes): handlers
// return an *Error and Write answers with GitHub's shape, so every refusal looks like
// GitHub's; Decode reads a JSON request body with GitHub's errors.
package apierr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// DocsURL is where GitHub's error bodies point; the emulator keeps the shape.
const DocsURL = "https://docs.github.com/rest"

// MaxBody bounds request bodies; GitHub refuses far smaller ones for most routes.
const MaxBody = 25 << 20

// Error is an error with GitHub's JSON shape.
type Error struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	// Errors holds Detail objects ("Validation Failed") or plain strings (the
	// "Unprocessable Entity" form some operations answer, e.g. review comments).
	Errors []any  `json:"errors,omitempty"`
	Docs   string `json:"documentation_url"`
	Code   string `json:"status"`
}

// Detail is one entry of a 422's "errors" array.
type Detail struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// New is an error of status with GitHub's message msg.
func New(status int, msg string) *Error {
	return &Error{Status: status, Message: msg, Docs: DocsURL, Code: strconv.Itoa(status)}
}

// NotFound is GitHub's 404.
func NotFound() *Error { return New(http.StatusNotFound, "Not Found") }

// BadCredentials is GitHub's 401 for a token or key it does not accept.
func BadCredentials() *Error { return New(http.StatusUnauthorized, "Bad credentials") }

// RequiresAuth is GitHub's 401 for a request without credentials.
func RequiresAuth() *Error {
	return New(http.StatusUnauthorized, "Requires authentication")
}

// NotAccessible is GitHub's 403 for an installation token without the permission.
func NotAccessible() *Error {
	return New(http.StatusForbidden, "Resource not accessible by integration")
}

// NotAnApp is GitHub's answer to a person's token on an App-only operation (creating
// or updating a check run).
func NotAnApp() *Error {
	e := New(http.StatusForbidden, "You must authenticate via a GitHub App.")
	e.Docs = "https://docs.github.com/rest/checks/runs#create-a-check-run"
	return e
}

// BadJSON is GitHub's 400 for a body that is not JSON.
func BadJSON(detail string) *Error {
	return New(http.StatusBadRequest, "Problems parsing JSON: "+detail)
}

// Validation is GitHub's 422 "Validation Failed" with one detail.
func Validation(resource, field, code, msg string) *Error {
	e := New(http.StatusUnprocessableEntity, "Validation Failed")
	e.Errors = []any{Detail{Resource: resource, Field: field, Code: code, Message: msg}}
	return e
}

// Unprocessable is a 422 with a plain message, as GitHub sends for refused state
// changes ("Reference already exists", "Pull Request is not mergeable").
func Unprocessable(msg string) *Error {
	return New(http.StatusUnprocessableEntity, msg)
}

// UnprocessableList is GitHub's 422 whose errors are plain strings, as the review
// routes answer: {"message": "Unprocessable Entity", "errors": ["Line could not be resolved"]}.
func UnprocessableList(msgs ...string) *Error {
	e := New(http.StatusUnprocessableEntity, "Unprocessable Entity")
	for _, m := range msgs {
		e.Errors = append(e.Errors, m)
	}
	return e
}

// WriteJSON answers with v as JSON, HTML characters not escaped, as GitHub writes them.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if v == nil {
		return
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Write answers with err: an *Error as it says, anything else as a 500.
func Write(w http.ResponseWriter, err error) {
	var ae *Error
	if !errors.As(err, &ae) {
		ae = New(http.StatusInternalServerError, "Server Error: "+err.Error())
	}
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
	}
	WriteJSON(w, ae.Status, ae)
}

// StatusOf is the status err answers with: an *Error's, else 500.
func StatusOf(err error) int {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Status
	}
	return http.StatusInternalServerError
}

// Decode reads a JSON request body strictly enough to give GitHub's errors: 400 for
// malformed JSON, 422 for a wrong type.
func Decode(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	return parseJSON(body, v)
}

// DecodeOptional is Decode for routes whose body may be absent.
func DecodeOptional(r *http.Request, v any) error {
	if r.ContentLength == 0 && r.Header.Get("Transfer-Encoding") == "" {
		return nil
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return parseJSON(body, v)
}

// readBody reads up to one byte more than MaxBody, so parseJSON can refuse a larger body.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, BadJSON(err.Error())
	}
	return body, nil
}

// parseJSON is Decode's work on a body already read.
func parseJSON(body []byte, v any) error {
	if len(body) > MaxBody {
		return New(http.StatusRequestEntityTooLarge, "Request body too large")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return BadJSON("the request body is empty")
	}
	if err := json.Unmarshal(body, v); err != nil {
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) {
			return Validation("", te.Field, "invalid",
				fmt.Sprintf("%s is not a %s", te.Field, te.Type.String()))
		}
		return BadJSON(err.Error())
	}
	return nil
}
