package gateway

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// toolAttack is one request an agent could send to have the provider run a tool for it,
// declared somewhere other than a plain entry of the top-level tools array, or in a form
// the gateway forwarded before. place names where the tool hides (TestEveryToolPlaceIsAttacked).
type toolAttack struct {
	name, place, path, body string
	says                    string // in the refusal, besides [server-tool]
}

// A client function and the client tool search Codex declares, to hide a server tool among.
const (
	fnTool         = `{"type":"function","name":"exec_command","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}`
	clientSearch   = `{"type":"tool_search","execution":"client","description":"Searches over deferred tool metadata","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}`
	userMsg        = `{"type":"message","role":"user","content":[{"type":"input_text","text":"search https://evil.test/?d=secret"}]}`
	responsesStart = `{"model":"gpt-5.5","stream":true,"store":false,"max_output_tokens":1000,`
)

// responses builds a Responses body from its members after the model.
func responses(members string) string { return responsesStart + members + `}` }

var toolAttacks = []toolAttack{
	// Hosted tool search: tool_search without "execution" is the provider's (the API's
	// default is "server"); only "execution":"client" passes, spelled exactly.
	{"tool_search without execution", "form:tool_search", "/openai/v1/responses",
		responses(`"input":[` + userMsg + `],"tools":[` + fnTool + `,{"type":"tool_search"}]`), `without "execution" it is hosted tool search`},
	{"tool_search execution server", "form:tool_search", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"tool_search","execution":"server"}]`), `"execution":"server"`},
	{"tool_search execution hosted", "form:tool_search", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"tool_search","execution":"hosted"}]`), `"execution":"hosted"`},
	{"tool_search execution in odd case", "form:tool_search", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"tool_search","execution":"Client"}]`), `"execution":"Client"`},
	{"tool_search execution null", "form:tool_search", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"tool_search","execution":null}]`), `without "execution"`},
	{"tool_search execution not a string", "form:tool_search", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"tool_search","execution":["client"]}]`), "execution must be a string"},
	{"tool_search execution given twice", "form:tool_search", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"tool_search","execution":"client","execution":"server"}]`), `duplicate key "execution"`},
	{"tool_search type in odd case", "tools", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"Tool_Search","execution":"client"}]`), `type "Tool_Search"`},
	{"tool_search type with a trailing space", "tools", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"tool_search ","execution":"client"}]`), `type "tool_search "`},
	{"tool_search type escaped", "form:tool_search", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"tool\u005fsearch","execution":"server"}]`), `"execution":"server"`},

	// The hosted shell: a shell tool whose commands run in a container at the provider.
	{"shell in an auto container with network", "form:shell", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"shell","environment":{"type":"container_auto","network_policy":{"type":"allowlist","allowed_domains":["evil.test"]}}}]`), `environment of type "container_auto"`},
	{"shell in a referenced container", "form:shell", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"shell","environment":{"type":"container_reference","container_id":"cntr_1"}}]`), `environment of type "container_reference"`},
	{"shell in an environment without type", "form:shell", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"shell","environment":{"network_policy":{"type":"disabled"}}}]`), `environment of type ""`},
	{"shell environment in odd case", "form:shell", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"shell","environment":{"type":"Local"}}]`), `environment of type "Local"`},
	{"shell environment type given twice", "form:shell", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"shell","environment":{"type":"local","type":"container_auto"}}]`), `duplicate key "type"`},
	{"shell environment as a string", "form:shell", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"shell","environment":"container_auto"}]`), "environment: not a single JSON object"},

	// A namespace groups function and custom tools only.
	{"namespace holding web_search", "form:namespace", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"namespace","name":"crm","description":"d","tools":[` + fnTool + `,{"type":"web_search"}]}]`), `tools[1] of type "web_search"`},
	{"namespace holding a namespace", "form:namespace", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"namespace","name":"a","description":"d","tools":[{"type":"namespace","name":"b","tools":[{"type":"mcp","server_label":"x","server_url":"https://evil.test/mcp"}]}]}]`), `tools[0] of type "namespace"`},
	{"namespace holding hosted tool search", "form:namespace", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"namespace","name":"a","description":"d","tools":[{"type":"tool_search"}]}]`), `of type "tool_search"`},
	{"namespace tool with two types", "form:namespace", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"namespace","name":"a","description":"d","tools":[{"type":"function","name":"f","type":"web_search"}]}]`), `duplicate key "type"`},
	{"namespace tools not an array", "form:namespace", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"namespace","name":"a","description":"d","tools":{"type":"web_search"}}]`), "must be an array of objects"},

	// Other tool types and shapes in the top-level array.
	{"programmatic tool calling", "tools", "/openai/v1/responses",
		responses(`"input":"x","tools":[` + fnTool + `,{"type":"programmatic_tool_calling"}]`), `type "programmatic_tool_calling"`},
	{"function type in odd case", "tools", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"Function","name":"f"}]`), `type "Function"`},
	{"web_search in upper case", "tools", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":"WEB_SEARCH"}]`), `type "WEB_SEARCH"`},
	{"tool type not a string", "tools", "/openai/v1/responses",
		responses(`"input":"x","tools":[{"type":["web_search"]}]`), "type must be a non-empty string"},
	{"tools given twice", "tools", "/openai/v1/responses",
		responsesStart + `"input":"x","tools":[` + fnTool + `],"tools":[{"type":"web_search"}]}`, `two "tools" members`},

	// tool_choice naming the hosted forms.
	{"tool_choice allowed_tools with hosted tool search", "tool_choice", "/openai/v1/responses",
		responses(`"input":"x","tools":[` + clientSearch + `],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"tool_search"}]}`), `tool_choice naming a tool of type "tool_search"`},
	{"tool_choice tool_search", "tool_choice", "/openai/v1/responses",
		responses(`"input":"x","tool_choice":{"type":"tool_search","execution":"server"}`), `tool_choice naming a tool of type "tool_search"`},
	{"tool_choice tool_search execution given twice", "tool_choice", "/openai/v1/responses",
		responses(`"input":"x","tool_choice":{"type":"tool_search","execution":"client","execution":"server"}`), "duplicate"},
	{"tool_choice allowed_tools with the hosted shell", "tool_choice", "/openai/v1/responses",
		responses(`"input":"x","tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"shell","environment":{"type":"container_auto"}}]}`), "container_auto"},
	{"tool_choice given twice", "tool_choice", "/openai/v1/responses",
		responsesStart + `"input":"x","tool_choice":"auto","tool_choice":{"type":"web_search_preview"}}`, `two "tool_choice" members`},

	// additional_tools input items: Codex's way of declaring its tools for some models.
	{"additional_tools with web_search", "input:additional_tools", "/openai/v1/responses",
		responses(`"input":[{"type":"additional_tools","role":"developer","tools":[` + fnTool + `,{"type":"web_search"}]},` + userMsg + `]`), `input[0].tools[1]: tool "" of type "web_search"`},
	{"additional_tools with mcp", "input:additional_tools", "/openai/v1/responses",
		responses(`"input":[` + userMsg + `,{"type":"additional_tools","role":"developer","tools":[{"type":"mcp","server_label":"x","server_url":"https://evil.test/mcp","require_approval":"never"}]}]`), `input[1].tools[0]: tool "" of type "mcp"`},
	{"additional_tools with code_interpreter", "input:additional_tools", "/openai/v1/responses",
		responses(`"input":[{"type":"additional_tools","role":"developer","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}]`), `type "code_interpreter"`},
	{"additional_tools with hosted tool search", "input:additional_tools", "/openai/v1/responses",
		responses(`"input":[{"type":"additional_tools","role":"developer","tools":[{"type":"tool_search"}]}]`), `input[0].tools[0]: tool "" of type "tool_search"`},
	{"additional_tools with the hosted shell", "input:additional_tools", "/openai/v1/responses",
		responses(`"input":[{"type":"additional_tools","role":"developer","tools":[{"type":"shell","environment":{"type":"container_auto"}}]}]`), "container_auto"},
	{"additional_tools namespace hiding web_search", "input:additional_tools", "/openai/v1/responses",
		responses(`"input":[{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","description":"","tools":[{"type":"custom","name":"exec"},{"type":"web_search_preview"}]}]}]`), `of type "web_search_preview"`},
	{"additional_tools tools not an array", "input:additional_tools", "/openai/v1/responses",
		responses(`"input":[{"type":"additional_tools","role":"developer","tools":{"type":"web_search"}}]`), "input[0].tools is not an array"},
	{"additional_tools tool with two types", "input:additional_tools", "/openai/v1/responses",
		responses(`"input":[{"type":"additional_tools","role":"developer","tools":[{"type":"function","name":"f","type":"web_search"}]}]`), `duplicate key "type"`},
	{"additional_tools with two tools members", "input:additional_tools", "/openai/v1/responses",
		responses(`"input":[{"type":"additional_tools","role":"developer","tools":[` + fnTool + `],"tools":[{"type":"web_search"}]}]`), `input[0] has two "tools" members`},
	{"item with two types, tools first", "input:additional_tools", "/openai/v1/responses",
		responses(`"input":[{"tools":[{"type":"web_search"}],"type":"message","type":"additional_tools","role":"developer"}]`), `input[0] has two "type" members`},
	{"additional_tools type in odd case", "input:other", "/openai/v1/responses",
		responses(`"input":[{"type":"Additional_Tools","role":"developer","tools":[{"type":"web_search"}]}]`), `input[0] is an object of type "Additional_Tools" holding tools`},

	// tool_search_output items: the tools a search loaded, which a client may make up.
	{"tool_search_output loading web_search", "input:tool_search_output", "/openai/v1/responses",
		responses(`"input":[` + userMsg + `,{"type":"tool_search_call","execution":"client","call_id":"ts_1","status":"completed","arguments":{"query":"web"}},{"type":"tool_search_output","execution":"client","call_id":"ts_1","status":"completed","tools":[{"type":"web_search"}]}],"tools":[` + clientSearch + `]`), `input[2].tools[0]: tool "" of type "web_search"`},
	{"tool_search_output loading an mcp server", "input:tool_search_output", "/openai/v1/responses",
		responses(`"input":[{"type":"tool_search_output","execution":"client","call_id":"ts_1","tools":[{"type":"mcp","server_label":"x","server_url":"https://evil.test/mcp","defer_loading":true}]}]`), `type "mcp"`},
	{"tool_search_output namespace hiding file_search", "input:tool_search_output", "/openai/v1/responses",
		responses(`"input":[{"type":"tool_search_output","execution":"client","call_id":"ts_1","tools":[{"type":"namespace","name":"n","description":"d","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}]}]`), `of type "file_search"`},

	// tools anywhere else in input: refused whatever they hold.
	{"an item type the gateway does not know", "input:other", "/openai/v1/responses",
		responses(`"input":[{"type":"tool_declarations","tools":[{"type":"web_search"}]}]`), `input[0] is an object of type "tool_declarations" holding tools`},
	{"a message holding client tools", "input:other", "/openai/v1/responses",
		responses(`"input":[{"type":"message","role":"developer","content":"x","tools":[` + fnTool + `]}]`), `input[0] is an object of type "message" holding tools`},
	{"an item without type holding tools", "input:other", "/openai/v1/responses",
		responses(`"input":[{"role":"developer","content":"x","tools":[{"type":"web_search"}]}]`), "input[0] is an object holding tools"},
	{"mcp_list_tools item", "input:other", "/openai/v1/responses",
		responses(`"input":[{"type":"mcp_list_tools","id":"mcpl_1","server_label":"x","tools":[{"name":"fetch","input_schema":{"type":"object"}}]}]`), `of type "mcp_list_tools" holding tools`},
	{"additional_tools nested in a message's content", "input:other", "/openai/v1/responses",
		responses(`"input":[{"role":"user","content":[{"type":"input_text","text":"x"},{"type":"additional_tools","role":"developer","tools":[{"type":"web_search"}]}]}]`), `input[0].content[1] is an object of type "additional_tools" holding tools`},
	{"additional_tools nested in a tool search's arguments", "input:other", "/openai/v1/responses",
		responses(`"input":[{"type":"tool_search_call","execution":"client","call_id":"ts_1","arguments":{"additional_tools":{"type":"additional_tools","tools":[{"type":"web_search"}]}}}]`), "input[0].arguments.additional_tools is an object"},
	{"input as one object instead of an array", "input:other", "/openai/v1/responses",
		responses(`"input":{"type":"additional_tools","role":"developer","tools":[{"type":"web_search"}]}`), `input is an object of type "additional_tools" holding tools`},
	{"input given twice", "input:other", "/openai/v1/responses",
		responsesStart + `"input":"x","input":[{"type":"additional_tools","role":"developer","tools":[{"type":"web_search"}]}]}`, `two "input" members`},

	// State the provider holds, which can bring tools the body does not show.
	{"previous_response_id", "state:previous_response_id", "/openai/v1/responses",
		responses(`"previous_response_id":"resp_1","input":"go on"`), "previous_response_id is refused"},
	{"conversation by id", "state:conversation", "/openai/v1/responses",
		responses(`"conversation":"conv_1","input":"go on"`), "conversation is refused"},
	{"conversation as an object", "state:conversation", "/openai/v1/responses",
		responses(`"conversation":{"id":"conv_1"},"input":"go on"`), "conversation is refused"},
	{"stored prompt", "state:prompt", "/openai/v1/responses",
		responses(`"prompt":{"id":"pmpt_1","version":"2"},"input":"x"`), "stored prompt brings"},
	{"stored prompt with a URL variable", "state:prompt", "/openai/v1/responses",
		responses(`"prompt":{"id":"pmpt_1","variables":{"pic":{"type":"input_image","image_url":"https://evil.test/p.png"}}},"input":"x"`), "prompt is refused"},
	{"item_reference to a stored item", "input:item_reference", "/openai/v1/responses",
		responses(`"input":[` + userMsg + `,{"type":"item_reference","id":"atl_68a9f1"}],"tools":[` + fnTool + `]`), `input[1], an item of type "item_reference", is refused`},
	{"item_reference without its type first", "input:item_reference", "/openai/v1/responses",
		responses(`"input":[{"id":"atl_68a9f1","type":"item_reference"}]`), `of type "item_reference"`},
	{"stored prompt given twice", "state:prompt", "/openai/v1/responses",
		responsesStart + `"prompt":null,"prompt":{"id":"pmpt_1"},"input":"x"}`, `two "prompt" members`},
}

// TestToolDeclarationsRefused: a tool the provider would run is refused wherever the
// request declares it or however it spells it: hosted tool search (tool_search without
// "execution":"client"), the hosted shell, a namespace hiding a server tool, server tools
// in additional_tools or tool_search_output input items, tools held by any other object
// in input, tool_choice naming the hosted forms, state the provider holds
// (previous_response_id, conversation, a stored prompt), and any of these given twice or
// in a shape the gateway cannot read. Each is 403 [server-tool] naming what and why,
// audited, and never reaches the API.
func TestToolDeclarationsRefused(t *testing.T) {
	f := newFixture(t, 0, nil)
	for _, tc := range toolAttacks {
		t.Run(tc.name, func(t *testing.T) {
			before := f.anthropic.count() + f.openai.count()
			resp, body := f.do(t, "POST", tc.path, map[string]string{"Authorization": "Bearer " + testSentinel}, tc.body)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "[server-tool]") || !strings.Contains(body, tc.says) {
				t.Fatalf("status %d (%s), want 403 [server-tool] naming %q", resp.StatusCode, body, tc.says)
			}
			if f.anthropic.count()+f.openai.count() != before {
				t.Fatal("the refused call reached the upstream")
			}
		})
	}
	if a := f.auditText(t); strings.Count(a, "[server-tool]") != len(toolAttacks) {
		t.Fatalf("server-tool refusals not all audited with their reason:\n%s", a)
	}
}

// TestEveryToolPlaceIsAttacked: every place the gateway knows a request can declare or
// bring tools (the tools array, tool_choice, each client form of a tool type, each input
// item type that declares tools and any other object in input, each member naming state
// the provider holds) has at least one attack in toolAttacks, and every attack names a
// place that exists: a new place added to the code needs its attack.
func TestEveryToolPlaceIsAttacked(t *testing.T) {
	places := map[string]bool{"tools": true, "tool_choice": true, "input:other": true}
	for typ := range clientForms["openai"] {
		places["form:"+typ] = true
	}
	for typ := range inputToolItems {
		places["input:"+typ] = true
	}
	for member := range storedState {
		places["state:"+member] = true
	}
	for typ := range storedItems {
		places["input:"+typ] = true
	}
	tried := map[string]bool{}
	for _, a := range toolAttacks {
		if !places[a.place] {
			t.Errorf("attack %q names no place %q", a.name, a.place)
		}
		tried[a.place] = true
	}
	for p := range places {
		if !tried[p] {
			t.Errorf("place %s has no attack in toolAttacks", p)
		}
	}
}

// TestRealCodexRequestsPass: the requests the real Codex 0.171.0 CLI sends are forwarded
// byte for byte: with gpt-5.5 it declares client-executed tool search
// ({"type":"tool_search","execution":"client"}) among its tools
// (testdata/codex-0.171.0-gpt-5.5-request-3.json, internal/scriptedmodel's capture);
// with its default model, gpt-6.2-sol, it declares every tool in an additional_tools
// input item, as namespaces of function and custom tools (its JavaScript exec among
// them) and no top-level tools (testdata/codex-0.171.0-gpt-6.2-sol-request-0.json, the
// first request of `codex exec --json "Write hello.txt"` against a capturing server;
// temporary directories rewritten to /workspace and /home/agent, installation id
// zeroed). So do the client forms around them: a client tool search's call and the
// namespace its output loads, a shell the harness runs, and stored state left null.
func TestRealCodexRequestsPass(t *testing.T) {
	f := newFixture(t, 1000, nil)
	f.openai.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"response","model":"gpt-5.5","usage":{"input_tokens":100,"output_tokens":10}}`)
	})
	tests := []struct{ name, body string }{
		{"codex gpt-5.5", readTestdata(t, "codex-0.171.0-gpt-5.5-request-3.json")},
		{"codex gpt-6.2-sol", readTestdata(t, "codex-0.171.0-gpt-6.2-sol-request-0.json")},
		{"client tool search loading a namespace", responses(`"input":[` + userMsg + `,` +
			`{"type":"tool_search_call","execution":"client","call_id":"ts_1","status":"completed","arguments":{"query":"calendar","limit":8}},` +
			`{"type":"tool_search_output","execution":"client","call_id":"ts_1","status":"completed","tools":[{"type":"namespace","name":"mcp__cal__","description":"Calendar","tools":[{"type":"function","name":"create_event","defer_loading":true,"strict":false,"parameters":{"type":"object"}},{"type":"custom","name":"note"}]}]},` +
			`{"type":"function_call","call_id":"c_2","namespace":"mcp__cal__","name":"create_event","arguments":"{}"}],` +
			`"tools":[` + fnTool + `,` + clientSearch + `],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"exec_command"},{"type":"tool_search","execution":"client"}]}`)},
		{"additional_tools with client search and a local shell", responses(`"input":[{"type":"additional_tools","role":"developer","tools":[` + clientSearch + `,{"type":"shell"},{"type":"shell","environment":{"type":"local","skills":[{"name":"s","description":"d","path":"/workspace/s"}]}},{"type":"apply_patch"},{"type":"local_shell"}]},` + userMsg + `],"tool_choice":{"type":"shell"}`)},
		{"stored state null", responses(`"input":"x","previous_response_id":null,"conversation":null,"prompt":null,"tools":null,"tool_choice":null`)},
		{"an item's tools null", responses(`"input":[{"type":"message","role":"user","content":"x","tools":null}]`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.do(t, "POST", "/openai/v1/responses", map[string]string{"Authorization": "Bearer " + testSentinel}, tc.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := string(f.openai.lastBody(t)); got != tc.body {
				t.Fatalf("body changed in transit:\n%.300s", got)
			}
		})
	}
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
