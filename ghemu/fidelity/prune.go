package fidelity

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// rawSpec is GitHub's OpenAPI document split one level deep, so that a subset of its paths
// can be cut out without building the whole document in kin-openapi (which takes seconds
// and a gigabyte of allocations for the full 13 MB file).
type rawSpec struct {
	top        map[string]json.RawMessage
	paths      map[string]json.RawMessage
	components map[string]map[string]json.RawMessage
}

// componentRef matches a local reference such as "#/components/schemas/issue".
var componentRef = regexp.MustCompile(`"\$ref"\s*:\s*"#/components/([^/"]+)/([^"]+)"`)

func parseRawSpec(data []byte) (*rawSpec, error) {
	s := &rawSpec{}
	if err := json.Unmarshal(data, &s.top); err != nil {
		return nil, fmt.Errorf("failed to decode the OpenAPI document: %w", err)
	}
	if err := json.Unmarshal(s.top["paths"], &s.paths); err != nil {
		return nil, fmt.Errorf("failed to decode the OpenAPI document's paths: %w", err)
	}
	if raw, ok := s.top["components"]; ok {
		if err := json.Unmarshal(raw, &s.components); err != nil {
			return nil, fmt.Errorf("failed to decode the OpenAPI document's components: %w", err)
		}
	}
	return s, nil
}

// pathTemplates returns every path template of the document, sorted.
func (s *rawSpec) pathTemplates() []string {
	out := make([]string, 0, len(s.paths))
	for p := range s.paths {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// prune returns a document holding only the named paths (every method of each) and the
// components they reference, directly or through other components. Schemas are copied
// byte for byte, so validation stays against GitHub's own definitions. The x-webhooks
// section is dropped: webhook bodies are checked against the webhook schema instead.
func (s *rawSpec) prune(keep []string) ([]byte, error) {
	paths := make(map[string]json.RawMessage, len(keep))
	var missing []string
	for _, p := range keep {
		raw, ok := s.paths[p]
		if !ok {
			missing = append(missing, p)
			continue
		}
		paths[p] = raw
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("path templates %q are not in GitHub's OpenAPI description: name them exactly as the description does, e.g. /repos/{owner}/{repo}/issues/{issue_number}", missing)
	}

	components := map[string]map[string]json.RawMessage{}
	var queue []json.RawMessage
	for _, raw := range paths {
		queue = append(queue, raw)
	}
	// add copies a component and queues it for the references it holds.
	add := func(kind, name string) bool {
		target, ok := s.components[kind][name]
		if !ok {
			return false
		}
		if components[kind] == nil {
			components[kind] = map[string]json.RawMessage{}
		}
		components[kind][name] = target
		queue = append(queue, target)
		return true
	}
	// The generic error responses are kept whatever the paths reference: the
	// middleware checks undeclared error statuses against them.
	for _, name := range genericErrors {
		if !add("responses", name) {
			return nil, fmt.Errorf("failed to prune the OpenAPI document: it has no #/components/responses/%s", name)
		}
	}
	for len(queue) > 0 {
		raw := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, m := range componentRef.FindAllSubmatch(raw, -1) {
			kind, name := string(m[1]), unescapePointer(string(m[2]))
			if _, done := components[kind][name]; done {
				continue
			}
			if !add(kind, name) {
				return nil, fmt.Errorf("failed to prune the OpenAPI document: #/components/%s/%s is referenced but not defined", kind, name)
			}
		}
	}

	out := make(map[string]any, len(s.top))
	for k, v := range s.top {
		switch k {
		case "paths", "components", "x-webhooks":
		default:
			out[k] = v
		}
	}
	out["paths"] = paths
	out["components"] = components
	data, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the pruned OpenAPI document: %w", err)
	}
	return data, nil
}

// unescapePointer undoes JSON Pointer escaping (RFC 6901) in one reference token.
func unescapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}
