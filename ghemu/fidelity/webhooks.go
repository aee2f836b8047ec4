package fidelity

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// webhookSchemaURL names the embedded schema inside the compiler; nothing is fetched.
const webhookSchemaURL = "https://bumper.invalid/octokit-webhooks-schema.json"

// Webhooks is the octokit webhook schema (the copy embedded in this package), ready to
// check delivery bodies. Each event and action is compiled on first use. Safe for
// concurrent use: load it once and share it.
type Webhooks struct {
	mu       sync.Mutex // the compiler is not safe for concurrent use
	compiler *jsonschema.Compiler
	defs     map[string]*webhookDef // read-only after LoadWebhooks
	printer  *message.Printer
}

type webhookDef struct {
	once   sync.Once
	schema *jsonschema.Schema
	err    error
}

// LoadWebhooks decompresses and parses the embedded webhook schema.
func LoadWebhooks() (*Webhooks, error) {
	data, err := gunzip("webhook schema", webhookSchemaGzip)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("failed to decode the webhook schema: %w", err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("failed to read the webhook schema: its root is not an object")
	}
	definitions, ok := root["definitions"].(map[string]any)
	if !ok {
		return nil, errors.New("failed to read the webhook schema: it has no definitions")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	// The library's uri-template check splits the URL on "/" before matching braces, so it
	// rejects RFC 6570 path expansions such as ".../following{/other_user}" that every
	// real payload holds. This compiler uses the same check as the OpenAPI side instead.
	c.RegisterFormat(&jsonschema.Format{Name: "uri-template", Validate: stringFormat(validateURITemplate)})
	c.RegisterFormat(&jsonschema.Format{Name: "date-time", Validate: stringFormat(validateWebhookDateTime)})
	if err := c.AddResource(webhookSchemaURL, doc); err != nil {
		return nil, fmt.Errorf("failed to add the webhook schema: %w", err)
	}
	w := &Webhooks{compiler: c, defs: make(map[string]*webhookDef, len(definitions)), printer: message.NewPrinter(language.English)}
	for name := range definitions {
		w.defs[name] = &webhookDef{}
	}
	return w, nil
}

// Validate checks a delivery body against the schema of its event (the X-GitHub-Event
// header) and action (the body's "action" field). The schema names them
// "<event>$<action>", or "<event>$event" for events without actions, such as ping.
// The error lists each failing field as a JSON pointer with the reason.
func (w *Webhooks) Validate(event string, body []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s webhook body is not JSON: %w", event, err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return fmt.Errorf("%s webhook body is not a JSON object", event)
	}
	name, err := w.definitionFor(event, obj)
	if err != nil {
		return err
	}
	schema, err := w.compile(name)
	if err != nil {
		return err
	}
	if err := schema.Validate(obj); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%s webhook body does not match the schema %q: %s", event, name, strings.Join(w.leafMessages(ve), "; "))
		}
		return fmt.Errorf("failed to validate the %s webhook body: %w", event, err)
	}
	return nil
}

// stringFormat adapts a string check to jsonschema's format signature; format keywords
// ignore values of other types (the type keyword reports those).
func stringFormat(check func(string) error) func(any) error {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		return check(s)
	}
}

func (w *Webhooks) definitionFor(event string, obj map[string]any) (string, error) {
	if event == "" {
		return "", errors.New("webhook event is empty: pass the X-GitHub-Event header's value")
	}
	if _, ok := w.defs[event+"$event"]; ok {
		return event + "$event", nil
	}
	actions := w.actionsOf(event)
	if len(actions) == 0 {
		return "", fmt.Errorf("webhook event %q is not in the octokit webhook schema: check the X-GitHub-Event value", event)
	}
	raw, present := obj["action"]
	action, isString := raw.(string)
	switch {
	case !present:
		return "", fmt.Errorf("%s webhook body has no \"action\" field; %s events carry one of: %s", event, event, strings.Join(actions, ", "))
	case !isString:
		return "", fmt.Errorf("%s webhook body's \"action\" is %T, not a string", event, raw)
	case !slices.Contains(actions, action):
		return "", fmt.Errorf("%s webhook action %q is not in the schema; known actions: %s", event, action, strings.Join(actions, ", "))
	}
	return event + "$" + action, nil
}

func (w *Webhooks) actionsOf(event string) []string {
	var out []string
	prefix := event + "$"
	for name := range w.defs {
		if action, ok := strings.CutPrefix(name, prefix); ok {
			out = append(out, action)
		}
	}
	slices.Sort(out)
	return out
}

func (w *Webhooks) compile(name string) (*jsonschema.Schema, error) {
	def := w.defs[name]
	def.once.Do(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		def.schema, def.err = w.compiler.Compile(webhookSchemaURL + "#/definitions/" + name)
		if def.err != nil {
			def.err = fmt.Errorf("failed to compile webhook schema %q: %w", name, def.err)
		}
	})
	return def.schema, def.err
}

// leafMessages flattens a validation error to its innermost causes, each as
// "/json/pointer: reason"; the outer levels only repeat "doesn't validate with ...".
func (w *Webhooks) leafMessages(ve *jsonschema.ValidationError) []string {
	if len(ve.Causes) == 0 {
		return []string{fmt.Sprintf("%s: %s", jsonPointer(ve.InstanceLocation), ve.ErrorKind.LocalizedString(w.printer))}
	}
	var out []string
	for _, c := range ve.Causes {
		out = append(out, w.leafMessages(c)...)
	}
	return out
}
