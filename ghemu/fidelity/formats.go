package fidelity

import (
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// stringFormats are the checks for the string formats GitHub's description uses. They
// are passed per validation (openapi3.WithStringFormatValidators), never registered
// globally, so this package changes nothing for other users of kin-openapi in the same
// binary. kin-openapi checks date-time and date by itself too; these replace its
// messages (a page-wide regular expression) with one that shows a valid value.
//
// Not checked: "repo.nwo", "timestamp" and "binary" (one use each, no standard meaning).
func stringFormats() map[string]openapi3.StringFormatValidator {
	return map[string]openapi3.StringFormatValidator{
		"date-time":    openapi3.NewCallbackValidator(validateDateTime),
		"date":         openapi3.NewCallbackValidator(validateDate),
		"uri":          openapi3.NewCallbackValidator(validateURI),
		"uri-template": openapi3.NewCallbackValidator(validateURITemplate),
		"email":        openapi3.NewCallbackValidator(validateEmail),
	}
}

// validateDateTime accepts RFC 3339 with a "T" and a zone, as GitHub's REST API sends.
func validateDateTime(s string) error {
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return errors.New("not an RFC 3339 date-time: want e.g. 2011-04-14T16:00:49Z")
	}
	return nil
}

// validateDate accepts an RFC 3339 full-date.
func validateDate(s string) error {
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		return errors.New("not an RFC 3339 date: want e.g. 2011-04-14")
	}
	return nil
}

// validateURI accepts an absolute URI (RFC 3986: a scheme, then the rest).
func validateURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URI: %w", err)
	}
	if u.Scheme == "" {
		return errors.New("not an absolute URI: it has no scheme (GitHub sends full https:// URLs)")
	}
	return nil
}

// validateURITemplate accepts an RFC 6570 template: balanced, non-nested {…} expressions
// whose removal leaves an absolute URI, such as ".../labels{/name}".
func validateURITemplate(s string) error {
	var plain strings.Builder
	depth := 0
	for _, r := range s {
		switch r {
		case '{':
			if depth > 0 {
				return errors.New("not a URI template: nested '{'")
			}
			depth++
		case '}':
			if depth == 0 {
				return errors.New("not a URI template: '}' without '{'")
			}
			depth--
		default:
			if depth == 0 {
				plain.WriteRune(r)
			}
		}
	}
	if depth != 0 {
		return errors.New("not a URI template: unclosed '{'")
	}
	if err := validateURI(plain.String()); err != nil {
		return fmt.Errorf("not a URI template: %w", err)
	}
	return nil
}

// webhookDateTime is date-time as the octokit webhook schema's authors check it (the
// ajv-formats "date-time" their tests use): an RFC 3339 date and time, separated by "T"
// or a space, the zone optional. Real payloads need it: GitHub sent app timestamps as
// "2018-04-25 20:42:10" in check_run events, and the schema's own examples keep them.
var webhookDateTime = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}(:?\d{2})?)?$`)

// validateWebhookDateTime checks the shape with webhookDateTime and the calendar with
// time.Parse, so "2018-02-30 10:00:00" fails.
func validateWebhookDateTime(s string) error {
	m := webhookDateTime.FindStringSubmatch(s)
	if m == nil {
		return errors.New("not a date-time: want RFC 3339, e.g. 2018-04-25T20:42:10Z")
	}
	if _, err := time.Parse(time.DateTime, m[1]+" "+m[2]); err != nil {
		return fmt.Errorf("not a date-time: %w", err)
	}
	return nil
}

// validateEmail accepts a bare address ("octocat@github.com"), not "Name <addr>".
func validateEmail(s string) error {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return fmt.Errorf("not an email address: %w", err)
	}
	if a.Address != s {
		return errors.New("not a bare email address: it carries a display name or brackets")
	}
	return nil
}
