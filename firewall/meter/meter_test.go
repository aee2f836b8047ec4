package meter

import (
	"bytes"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

func prices(t testing.TB) *Prices {
	t.Helper()
	p, err := DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// feed gives the parser the body in pieces of size n, to prove the parser does not
// depend on how the stream is cut into reads.
func feed(p *Parser, body []byte, n int) Usage {
	for len(body) > 0 {
		k := min(n, len(body))
		p.Write(body[:k])
		body = body[k:]
	}
	return p.Usage()
}

func TestAnthropicSSEFixtures(t *testing.T) {
	tests := []struct {
		file string
		want Usage
	}{
		{"basic_response.txt", Usage{Model: "claude-3-opus-latest", Input: 11, Output: 6, Complete: true}},
		{"compaction_response.txt", Usage{Model: "claude-opus-4-7", Input: 30, Output: 8, Complete: true}},
		{"message_delta_fields_response.txt", Usage{Model: "claude-sonnet-4-5", Input: 40, Output: 8, CacheWrite: 12, CacheRead: 7, Complete: true}},
		{"tool_use_response.txt", Usage{Model: "claude-sonnet-4-20250514", Input: 377, Output: 65, Complete: true}},
	}
	for _, tc := range tests {
		body, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 7, 64, len(body)} {
			t.Run(tc.file, func(t *testing.T) {
				got := feed(NewParser("text/event-stream; charset=utf-8"), body, n)
				if got != tc.want {
					t.Fatalf("pieces of %d: got %+v, want %+v", n, got, tc.want)
				}
			})
		}
	}
}

func TestCutStreams(t *testing.T) {
	body, err := os.ReadFile("testdata/tool_use_response.txt")
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(body, []byte("event: content_block_start"))
	delta := bytes.Index(body, []byte("event: message_delta"))
	tests := []struct {
		name string
		cut  int
		want Usage
	}{
		{"before anything", 0, Usage{}},
		{"inside message_start", 40, Usage{}},
		{"after message_start", start, Usage{Model: "claude-sonnet-4-20250514", Input: 377, Output: 1}},
		{"before message_delta", delta, Usage{Model: "claude-sonnet-4-20250514", Input: 377, Output: 1}},
		{"message_delta without blank line", bytes.Index(body, []byte("event: message_stop")) - 1, Usage{Model: "claude-sonnet-4-20250514", Input: 377, Output: 65, Complete: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := feed(NewParser("text/event-stream"), body[:tc.cut], 5)
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestOtherShapes(t *testing.T) {
	tests := []struct {
		name, ctype, body string
		want              Usage
	}{
		{"anthropic json", "application/json", `{"id":"m","type":"message","model":"claude-haiku-4-5","usage":{"input_tokens":100,"output_tokens":20,"cache_creation_input_tokens":3,"cache_read_input_tokens":4}}`,
			Usage{Model: "claude-haiku-4-5", Input: 100, Output: 20, CacheWrite: 3, CacheRead: 4, Complete: true}},
		{"openai responses json", "application/json", `{"id":"r","object":"response","model":"gpt-5","usage":{"input_tokens":1000,"input_tokens_details":{"cached_tokens":600},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":1050}}`,
			Usage{Model: "gpt-5", Input: 1000, Output: 50, CacheRead: 600, CachedIncluded: true, Complete: true}},
		{"openai responses sse", "text/event-stream", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-5-codex\",\"usage\":null}}\n\nevent: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-5-codex\",\"usage\":{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":2},\"output_tokens\":3}}}\n\n",
			Usage{Model: "gpt-5-codex", Input: 10, Output: 3, CacheRead: 2, CachedIncluded: true, Complete: true}},
		{"chat completions json", "application/json", `{"id":"c","object":"chat.completion","model":"gpt-4o","usage":{"prompt_tokens":9,"completion_tokens":12,"prompt_tokens_details":{"cached_tokens":0}}}`,
			Usage{Model: "gpt-4o", Input: 9, Output: 12, CachedIncluded: true, Complete: true}},
		{"chat completions sse", "text/event-stream", "data: {\"model\":\"gpt-4o\",\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":null}\r\n\r\ndata: {\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}\r\n\r\ndata: [DONE]\r\n\r\n",
			Usage{Model: "gpt-4o", Input: 5, Output: 7, CachedIncluded: true, Complete: true}},
		{"error body", "application/json", `{"type":"error","error":{"type":"overloaded_error","message":"x"}}`, Usage{}},
		{"not json", "text/html", `<html>`, Usage{}},
		{"multi-line data", "text/event-stream", "data: {\"type\":\"message_delta\",\ndata: \"usage\":{\"output_tokens\":4}}\n\n", Usage{Output: 4, Complete: true}},
		{"negative ignored", "application/json", `{"model":"gpt-4o","usage":{"prompt_tokens":-5,"completion_tokens":2}}`, Usage{Model: "gpt-4o", Output: 2, CachedIncluded: true, Complete: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := feed(NewParser(tc.ctype), []byte(tc.body), 3)
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCost(t *testing.T) {
	p := prices(t)
	tests := []struct {
		name  string
		u     Usage
		want  float64
		known bool
	}{
		{"sonnet with cache", Usage{Model: "claude-sonnet-4-5-20250929", Input: 1e6, Output: 1e6, CacheWrite: 1e6, CacheRead: 1e6}, 3 + 15 + 3.75 + 0.3, true},
		{"longest prefix wins", Usage{Model: "claude-opus-4-5", Input: 1e6}, 5, true},
		{"opus 4", Usage{Model: "claude-opus-4-20250514", Input: 1e6}, 15, true},
		{"openai cached part of input", Usage{Model: "gpt-5", Input: 1e6, CacheRead: 4e5, CachedIncluded: true, Output: 1e5}, 0.6*1.25 + 0.4*0.125 + 1, true},
		{"gpt-5-mini not gpt-5", Usage{Model: "gpt-5-mini-2025-08-07", Input: 1e6}, 0.25, true},
		{"unknown model uses default", Usage{Model: "mystery-1", Input: 1e6, Output: 1e6}, 90, false},
		{"prefix without dash is not a match", Usage{Model: "gpt-5x", Input: 1e6}, 15, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, known := p.Cost(tc.u)
			if math.Abs(got-tc.want) > 1e-9 || known != tc.known {
				t.Fatalf("Cost = %v known=%v, want %v %v", got, known, tc.want, tc.known)
			}
		})
	}
}

func TestParsePricesStrict(t *testing.T) {
	for _, bad := range []string{
		"version: x\ndefault: {input: 1, output: 1}\nmodels: {a: {input: 1, outptu: 2}}\n",
		"default: {input: 1, output: 1}\n",
		"version: x\n",
		"version: x\ndefault: {input: 1, output: 1}\nmodels: {a: {input: -1}}\n",
	} {
		if _, err := ParsePrices([]byte(bad)); err == nil {
			t.Errorf("ParsePrices accepted %q", bad)
		}
	}
}

func TestBudget(t *testing.T) {
	m, err := New(prices(t), 0.001)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Check(); err != nil {
		t.Fatalf("fresh meter refused: %v", err)
	}
	m.Record(Usage{Model: "claude-sonnet-4-5", Input: 200, Complete: true}) // $0.0006
	if err := m.Check(); err != nil {
		t.Fatalf("under budget refused: %v", err)
	}
	m.Record(Usage{Model: "unknown", Output: 10}) // default row, incomplete: $0.00075
	err = m.Check()
	if err == nil || !strings.Contains(err.Error(), "budget of $0.00") {
		t.Fatalf("over budget: %v", err)
	}
	s := m.Summary()
	if s.Calls != 2 || s.UnknownModel != 1 || s.Partial != 1 || s.PriceTable == "" {
		t.Fatalf("summary %+v", s)
	}
	if _, err := New(prices(t), -1); err == nil {
		t.Fatal("negative budget accepted")
	}
}

func TestBodyPassesBytesAndReportsOnce(t *testing.T) {
	body, _ := os.ReadFile("testdata/basic_response.txt")
	calls := 0
	var got Usage
	rc := Body(io.NopCloser(bytes.NewReader(body)), "text/event-stream", func(u Usage) { calls++; got = u })
	out, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(out, body) {
		t.Fatalf("body changed in transit (err %v)", err)
	}
	rc.Close()
	if calls != 1 || got.Output != 6 {
		t.Fatalf("done called %d times with %+v", calls, got)
	}
}

func FuzzSSEUsage(f *testing.F) {
	for _, name := range []string{"basic_response.txt", "message_delta_fields_response.txt", "tool_use_response.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 3)
	}
	f.Add([]byte("data: {\"usage\":{\"output_tokens\":1}}\r\n\r\n"), 1)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		if n <= 0 {
			n = 1
		}
		whole := feed(NewParser("text/event-stream"), body, len(body)+1)
		pieces := feed(NewParser("text/event-stream"), body, n)
		if whole != pieces {
			t.Fatalf("usage depends on read sizes: %+v vs %+v", whole, pieces)
		}
		if whole.Input < 0 || whole.Output < 0 || whole.CacheRead < 0 || whole.CacheWrite < 0 {
			t.Fatalf("negative usage %+v", whole)
		}
	})
}

func BenchmarkParserSSE(b *testing.B) {
	body, _ := os.ReadFile("testdata/tool_use_response.txt")
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		feed(NewParser("text/event-stream"), body, 512)
	}
}
