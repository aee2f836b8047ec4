package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// A model request declares tools in more places than its top-level "tools" array, and
// every one of them is checked here against the same policy: only a tool the harness runs
// itself, in the VM behind the firewall, is forwarded. A tool the provider runs (web
// search and fetch, code execution, a hosted shell, MCP, file search, image generation,
// hosted tool search) would fetch URLs the allowlist never sees, so it is refused
// wherever it is declared:
//
//   - the request's "tools" array;
//   - "tool_choice", which can name a hosted tool even without declaring it;
//   - a Responses "input" item of type additional_tools (tools made available from that
//     point of the conversation: Codex declares all its tools this way for some models)
//     or tool_search_output (the tools a tool search loaded; with client-executed search
//     the client may return tools that were never declared), and the function and custom
//     tools a namespace groups;
//   - state the provider holds and the body does not show (previous_response_id,
//     conversation, a stored prompt): refused outright in checkModelFeatures.
//
// Any other object in "input" that holds a "tools" member, and any tool declaration the
// gateway cannot read unambiguously (not an array of objects, duplicate keys, a type
// that is not a string), is refused too: the gateway forwards only what it can tell the
// harness runs itself.

// clientToolTypes are the tool types the harness runs itself, in the VM, behind the
// firewall: functions and custom tools, and the provider-defined tools whose calls the
// client executes (Anthropic's bash, text editor and memory tools; OpenAI's shell,
// local_shell and apply_patch, client-executed tool search, and namespaces grouping
// functions). A tool without a type is an Anthropic client tool ({"name",
// "input_schema"}). Any other type is refused: the provider runs it (web search and
// fetch, code execution, MCP, file search, image generation, programmatic tool calling)
// or the harnesses have no use for it (computer use). A type listed in clientForms
// passes only in its client form.
var clientToolTypes = map[string][]string{
	"anthropic": {"custom", "bash_*", "text_editor_*", "memory_*"},
	"openai":    {"function", "custom", "local_shell", "shell", "apply_patch", "tool_search", "namespace"},
}

// clientForms are the tool types that have both a form the client runs and one the
// provider runs: each says why a declaration (its members) is the provider's form, or
// "" when the harness runs it; an error when it cannot be read.
var clientForms = map[string]map[string]func(tool []jsonField) (string, error){
	"openai": {
		"tool_search": toolSearchForm,
		"shell":       shellForm,
		"namespace":   namespaceForm,
	},
}

// clientToolList describes the tool types forwarded, for refusals.
var clientToolList = map[string]string{
	"anthropic": "untyped, custom, bash_*, text_editor_*, memory_*",
	"openai":    `function, custom, local_shell, apply_patch, shell without environment or with {"type":"local"}, tool_search with "execution":"client", namespace of function and custom tools`,
}

// inputToolItems are the Responses input item types whose "tools" declare tools: they
// are checked like the top-level array. Any other object in input holding "tools" is
// refused.
var inputToolItems = map[string]bool{"additional_tools": true, "tool_search_output": true}

// storedItems are the Responses input item types that stand for an item the provider
// stored rather than carry it, each with why it is refused: like previous_response_id,
// the body does not show what the provider adds (a stored additional_tools or
// tool_search_output item declares tools the gateway never sees). Codex sends every
// item whole, with store false.
var storedItems = map[string]string{
	"item_reference": "the provider would put in its place an item it stored, which can declare tools (additional_tools, tool_search_output) the gateway never sees; send the item itself instead",
}

// serverToolWhy says why a tool, field or model that makes the provider act on the
// network is refused.
const serverToolWhy = "it runs at the provider, which would fetch URLs the firewall's allowlist never sees (a way around default-deny egress) and bill fees the meter does not count; the firewall forwards only tools the harness runs itself in the VM"

// unreadableToolWhy says why a tool declaration the gateway cannot read is refused.
const unreadableToolWhy = "from a declaration it cannot read unambiguously the gateway cannot tell which tool the provider would run, and it forwards only tools it can tell the harness runs itself"

// checkTools refuses an array of tool declarations (the request's tools, at where, or
// those of an input item) that declares a tool the harness does not run itself, naming
// it, or that cannot be read as an array of objects without duplicate keys.
func checkTools(kind, where string, raw json.RawMessage) *refusal {
	if isNull(raw) {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return &refusal{http.StatusForbidden, fmt.Sprintf("%s is not an array of tool declarations, refused [server-tool]: %s", where, unreadableToolWhy)}
	}
	for i, item := range items {
		at := where + "[" + strconv.Itoa(i) + "]"
		tool, err := parseObject(item)
		if err != nil {
			return &refusal{http.StatusForbidden, fmt.Sprintf("%s cannot be read as one tool declaration (%v), refused [server-tool]: %s", at, err, unreadableToolWhy)}
		}
		typ, why, err := judgeTool(kind, tool)
		if err != nil {
			return &refusal{http.StatusForbidden, fmt.Sprintf("%s cannot be read as one tool declaration (%v), refused [server-tool]: %s", at, err, unreadableToolWhy)}
		}
		if why != "" {
			var name string
			if j := fieldIndex(tool, "name"); j >= 0 {
				json.Unmarshal(tool[j].raw, &name)
			}
			return &refusal{http.StatusForbidden, fmt.Sprintf("%s: tool %q of type %q is refused [server-tool]: %s", at, name, typ, why)}
		}
	}
	return nil
}

// judgeTool returns a tool declaration's type and why the provider would run it, or ""
// when the harness does.
func judgeTool(kind string, tool []jsonField) (typ, why string, err error) {
	if j := fieldIndex(tool, "type"); j >= 0 && !isNull(tool[j].raw) {
		if json.Unmarshal(tool[j].raw, &typ) != nil || typ == "" {
			return "", "", errors.New("type must be a non-empty string")
		}
	}
	if !isClientTool(kind, typ) {
		return typ, fmt.Sprintf("%s (%s tool types forwarded: %s)", serverToolWhy, kind, clientToolList[kind]), nil
	}
	if form := clientForms[kind][typ]; form != nil {
		why, err = form(tool)
	}
	return typ, why, err
}

// isClientTool says whether a tool of type typ ("" when it has none) may run in the
// harness: exactly one of clientToolTypes, no case folding.
func isClientTool(kind, typ string) bool {
	if typ == "" {
		return kind == "anthropic"
	}
	for _, t := range clientToolTypes[kind] {
		if prefix, ok := strings.CutSuffix(t, "*"); (ok && strings.HasPrefix(typ, prefix)) || t == typ {
			return true
		}
	}
	return false
}

// stringMember reads an optional string member of an object: "" when it is absent or
// null, an error when it is anything but a string.
func stringMember(obj []jsonField, key string) (string, error) {
	j := fieldIndex(obj, key)
	if j < 0 || isNull(obj[j].raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(obj[j].raw, &s) != nil {
		return "", fmt.Errorf("%s must be a string", key)
	}
	return s, nil
}

// toolSearchForm passes only client-executed tool search ("execution":"client"): the
// model emits a tool_search_call, the harness searches its own deferred tools in the VM
// and returns them as a tool_search_output (checked like any declaration). Hosted tool
// search is what {"type":"tool_search"} means without execution (the API's default is
// "server"): the provider searches and loads the deferred tools itself, MCP servers'
// included, out of the gateway's sight.
func toolSearchForm(tool []jsonField) (string, error) {
	execution, err := stringMember(tool, "execution")
	switch {
	case err != nil:
		return "", err
	case execution == "client":
		return "", nil
	case execution == "":
		return `without "execution" it is hosted tool search (the API's default execution is "server"): ` + hostedSearchWhy, nil
	}
	return fmt.Sprintf(`"execution":%q is not client-executed tool search: `, execution) + hostedSearchWhy, nil
}

const hostedSearchWhy = `the provider would search and load deferred tools itself (MCP servers' included), out of the firewall's sight; only "execution":"client" passes, where the harness searches its own tools in the VM`

// shellForm passes the shell tool the harness runs: without environment (the shell tool
// as first published, whose shell_call the client executes) or with {"type":"local"}.
// Any other environment (container_auto, container_reference) is the hosted shell: the
// commands run in a container at the provider, with network access if a network_policy
// allows it, which the firewall's allowlist never sees.
func shellForm(tool []jsonField) (string, error) {
	j := fieldIndex(tool, "environment")
	if j < 0 || isNull(tool[j].raw) {
		return "", nil
	}
	env, err := parseObject(tool[j].raw)
	if err != nil {
		return "", fmt.Errorf("environment: %w", err)
	}
	typ, err := stringMember(env, "type")
	if err != nil {
		return "", fmt.Errorf("environment: %w", err)
	}
	if typ == "local" {
		return "", nil
	}
	return fmt.Sprintf(`environment of type %q is not {"type":"local"}: any other environment (container_auto, container_reference) is the hosted shell, whose commands run in a container at the provider, with network access if a network_policy allows it, which the firewall's allowlist never sees; only a shell without environment or with {"type":"local"} passes, whose shell_call the harness runs in the VM`, typ), nil
}

// namespaceForm passes a namespace that groups only function and custom tools, as the
// API defines it; anything else inside is refused rather than looked up.
func namespaceForm(tool []jsonField) (string, error) {
	j := fieldIndex(tool, "tools")
	if j < 0 || isNull(tool[j].raw) {
		return "", nil
	}
	var items []json.RawMessage
	if json.Unmarshal(tool[j].raw, &items) != nil {
		return "", errors.New("a namespace's tools must be an array of objects")
	}
	for i, item := range items {
		inner, err := parseObject(item)
		if err != nil {
			return "", fmt.Errorf("tools[%d]: %w", i, err)
		}
		typ, err := stringMember(inner, "type")
		if err != nil {
			return "", fmt.Errorf("tools[%d]: %w", i, err)
		}
		if typ != "function" && typ != "custom" {
			return fmt.Sprintf("it groups tools[%d] of type %q: a namespace may group only function and custom tools, which the harness runs itself; anything else inside is refused rather than looked up", i, typ), nil
		}
	}
	return "", nil
}

// checkInputTools walks a Responses input once, so that a member given twice is seen
// whichever one the provider reads, and checks the tools every item declares: those of
// an additional_tools or tool_search_output item like the top-level array, and any other
// "tools" member, at any depth, is refused. A string input declares nothing.
func checkInputTools(kind string, raw json.RawMessage) (*refusal, error) {
	w := &inputWalker{kind: kind, dec: json.NewDecoder(bytes.NewReader(raw))}
	w.dec.UseNumber()
	tok, err := w.dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); ok && d == '[' {
		for i := 0; w.dec.More() && w.ref == nil; i++ {
			if tok, err = w.dec.Token(); err != nil {
				return nil, err
			}
			if err = w.value("input["+strconv.Itoa(i)+"]", tok, true); err != nil {
				return nil, err
			}
		}
		return w.ref, nil
	}
	// Not an array (the API takes a string or an array of items): still walked, with
	// no place where tools may be declared.
	err = w.value("input", tok, false)
	return w.ref, err
}

type inputWalker struct {
	kind string
	dec  *json.Decoder
	ref  *refusal // the first refusal; the walk stops there
}

// value walks the value that starts with tok, at path; item says whether it is one of
// the input's items, where tools may be declared.
func (w *inputWalker) value(path string, tok json.Token, item bool) error {
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if d == '[' {
		for i := 0; w.dec.More(); i++ {
			tok, err := w.dec.Token()
			if err != nil {
				return err
			}
			if err := w.value(path+"["+strconv.Itoa(i)+"]", tok, false); err != nil || w.ref != nil {
				return err
			}
		}
		_, err := w.dec.Token()
		return err
	}
	return w.object(path, item)
}

// object walks an object (its '{' read), refusing a second "tools" member, an item's
// second "type", and a "tools" member anywhere but in an item of a type that declares
// tools.
func (w *inputWalker) object(path string, item bool) error {
	var typ string
	var tools json.RawMessage
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if seen[key] && (key == "tools" || (key == "type" && item)) {
			// An item's type decides whether its tools are declarations.
			w.ref = &refusal{http.StatusForbidden, fmt.Sprintf("%s has two %q members, refused [server-tool]: parsers disagree on which one the provider reads, so the gateway cannot tell which tools the item declares; it forwards only tools it can tell the harness runs itself", path, key)}
			return nil
		}
		seen[key] = true
		if key == "tools" {
			// Kept whole and judged once the item's type is known, wherever it comes.
			if err := w.dec.Decode(&tools); err != nil {
				return err
			}
			continue
		}
		if tok, err = w.dec.Token(); err != nil {
			return err
		}
		if s, ok := tok.(string); ok && key == "type" {
			typ = s
		}
		if err := w.value(path+"."+key, tok, false); err != nil || w.ref != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil {
		return err
	}
	if why, ok := storedItems[typ]; ok && item {
		w.ref = &refusal{http.StatusForbidden, fmt.Sprintf("%s, an item of type %q, is refused [server-tool]: %s", path, typ, why)}
		return nil
	}
	if tools == nil || isNull(tools) {
		return nil
	}
	if item && inputToolItems[typ] {
		w.ref = checkTools(w.kind, path+".tools", tools)
		return nil
	}
	what := "an object"
	if typ != "" {
		what = fmt.Sprintf("an object of type %q", typ)
	}
	w.ref = &refusal{http.StatusForbidden, fmt.Sprintf("%s is %s holding tools, refused [server-tool]: the gateway reads tool declarations in input only in additional_tools and tool_search_output items, so it cannot tell whether the provider would run these; the firewall forwards only tools the harness runs itself in the VM", path, what)}
	return nil
}

// toolChoiceModes are the tool_choice types that choose among the request's own tools
// rather than name a tool: with the client tool types, the only types tool_choice may
// hold, at any depth (OpenAI's allowed_tools lists tools by type).
var toolChoiceModes = map[string][]string{
	"anthropic": {"auto", "any", "tool", "none"},
	"openai":    {"auto", "none", "required", "function", "custom", "allowed_tools"},
}

// checkToolChoice refuses a tool_choice that names a tool the harness does not run
// itself ({"type":"web_search_preview"} makes the provider search even without a tools
// array), or that cannot be read without ambiguity.
func checkToolChoice(kind string, raw json.RawMessage) *refusal {
	if isNull(raw) {
		return nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		if !isChoiceMode(kind, mode) {
			return &refusal{http.StatusForbidden, fmt.Sprintf("tool_choice %q is refused [server-tool]: tool_choice may be %s, or name a tool the harness runs", mode, strings.Join(toolChoiceModes[kind], ", "))}
		}
		return nil
	}
	typ, why, err := choiceTypes(kind, raw)
	if err != nil {
		return &refusal{http.StatusForbidden, fmt.Sprintf("tool_choice cannot be read (%v), refused [server-tool]: %s", err, unreadableToolWhy)}
	}
	if why != "" {
		return &refusal{http.StatusForbidden, fmt.Sprintf("tool_choice naming a tool of type %q is refused [server-tool]: %s", typ, why)}
	}
	return nil
}

// choiceTypes returns the first tool in a tool_choice object or array, at any depth,
// that the harness does not run (its type, and why), or "". An object whose type is a
// choice mode is walked further; one whose type is a client tool type is judged as a
// declaration (tool_search must be client-executed, a shell local); any other type is
// refused. Duplicate keys are refused.
func choiceTypes(kind string, raw json.RawMessage) (typ, why string, err error) {
	switch v := bytes.TrimSpace(raw); {
	case len(v) > 0 && v[0] == '{':
		obj, err := parseObject(v)
		if err != nil {
			return "", "", err
		}
		if j := fieldIndex(obj, "type"); j >= 0 {
			var t string
			if json.Unmarshal(obj[j].raw, &t) != nil || t == "" {
				return "", "", errors.New("type must be a non-empty string")
			}
			if !isChoiceMode(kind, t) {
				typ, why, err := judgeTool(kind, obj)
				if why != "" || err != nil || clientForms[kind][t] != nil {
					// A client form's members were judged whole.
					return typ, why, err
				}
			}
		}
		for _, f := range obj {
			if f.key == "type" {
				continue
			}
			if typ, why, err := choiceTypes(kind, f.raw); why != "" || err != nil {
				return typ, why, err
			}
		}
	case len(v) > 0 && v[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return "", "", err
		}
		for _, item := range items {
			if typ, why, err := choiceTypes(kind, item); why != "" || err != nil {
				return typ, why, err
			}
		}
	}
	return "", "", nil
}

func isChoiceMode(kind, typ string) bool { return slices.Contains(toolChoiceModes[kind], typ) }
