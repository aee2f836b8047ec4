package fidelity

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// OpenAPI is GitHub's REST API description (the copy embedded in this package), ready to
// check requests and responses. It is read-only once loaded and safe for concurrent use:
// load it once and share it between emulators and tests.
type OpenAPI struct {
	router *pathRouter
	filter *openapi3filter.Options
	skip   func(*http.Request) bool
	// skipResponse declares answers not to check (SkipResponse).
	skipResponse func(*http.Request, int) bool
}

// Option configures LoadOpenAPI.
type Option func(*loadConfig)

type loadConfig struct {
	paths []string
	skip  func(*http.Request) bool
	// skipResponse declares answers not to check (SkipResponse).
	skipResponse func(*http.Request, int) bool
}

// Paths limits the loaded description to these path templates, written exactly as GitHub's
// description writes them ("/repos/{owner}/{repo}/issues/{issue_number}"), with every
// method of each and every component they reference. Loading all 811 paths takes about a
// second; a few dozen take a fraction of that. A request to a GitHub route that was not
// loaded is reported as a mismatch that names the template to add. LoadOpenAPI fails if a
// template is not in the description.
func Paths(templates ...string) Option {
	return func(c *loadConfig) { c.paths = append(c.paths, templates...) }
}

// Skip declares requests that are not GitHub REST calls and must not be checked, such as
// git smart HTTP (/{owner}/{repo}.git/...), the OIDC issuer (/.well-known/...) or the
// emulator's own control routes. Every other request must match a GitHub route.
func Skip(skip func(*http.Request) bool) Option {
	return func(c *loadConfig) { c.skip = skip }
}

// SkipResponse declares answers that are not to be checked, once the handler gave them:
// those GitHub may give on any route although its description declares them on few or
// none (the emulator's injected faults: 429, 502, 503). The request is still checked.
func SkipResponse(skip func(r *http.Request, status int) bool) Option {
	return func(c *loadConfig) { c.skipResponse = skip }
}

// LoadOpenAPI decompresses and loads the embedded description (all paths, unless Paths
// names a subset) and corrects the known errata of errata.go.
func LoadOpenAPI(opts ...Option) (*OpenAPI, error) {
	var cfg loadConfig
	for _, o := range opts {
		o(&cfg)
	}
	data, err := gunzip("OpenAPI description", openAPIGzip)
	if err != nil {
		return nil, err
	}
	raw, err := parseRawSpec(data)
	if err != nil {
		return nil, err
	}
	all := raw.pathTemplates()
	keep := cfg.paths
	if len(keep) == 0 {
		keep = all
	}
	pruned, err := raw.prune(keep)
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(pruned)
	if err != nil {
		return nil, fmt.Errorf("failed to load GitHub's OpenAPI description: %w", err)
	}
	if err := applyErrata(doc); err != nil {
		return nil, err
	}
	// The description's server is https://api.github.com; the emulator serves the same
	// paths at the root of its own base URL, so routes are matched on the path alone.
	doc.Servers = nil

	filter := &openapi3filter.Options{
		// The emulator authenticates requests itself; GitHub's description declares no
		// security schemes, and an accepting function keeps it that way if one appears.
		AuthenticationFunc:                openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus:             true,
		MultiError:                        true,
		SkipSettingDefaults:               true,
		RejectWhenRequestBodyNotSpecified: true,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{
			openapi3.WithStringFormatValidators(stringFormats()),
		},
	}
	filter.WithCustomSchemaErrorFunc(schemaErrorMessage)

	return &OpenAPI{
		router:       newPathRouter(doc, all),
		filter:       filter,
		skip:         cfg.skip,
		skipResponse: cfg.skipResponse,
	}, nil
}

// PathCount reports how many path templates are loaded and how many GitHub's description
// has in all.
func (o *OpenAPI) PathCount() (loaded, inDescription int) {
	return o.router.doc.Paths.Len(), len(o.router.routes)
}

// schemaErrorMessage names the failing field as a JSON pointer and says why, without
// kin-openapi's default dump of the whole schema and value (which runs to pages for
// GitHub's large objects).
func schemaErrorMessage(err *openapi3.SchemaError) string {
	ptr := jsonPointer(err.JSONPointer())
	switch {
	case err.Origin != nil:
		return fmt.Sprintf("%s: %s", ptr, err.Origin.Error())
	case err.Reason != "":
		return fmt.Sprintf("%s: %s", ptr, err.Reason)
	default:
		return fmt.Sprintf("%s: does not satisfy %q", ptr, err.SchemaField)
	}
}

// jsonPointer renders a location in a JSON document; the root is "(root)" rather than
// the empty pointer, which reads as a missing value in a message.
func jsonPointer(tokens []string) string {
	if len(tokens) == 0 {
		return "(root)"
	}
	return "/" + strings.Join(tokens, "/")
}
