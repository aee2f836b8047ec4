package meter

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"sync"
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
		{"openai responses sse cut at max_output_tokens", "text/event-stream", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-5\",\"usage\":null}}\n\nevent: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"model\":\"gpt-5\",\"status\":\"incomplete\",\"usage\":{\"input_tokens\":10,\"output_tokens\":64}}}\n\n",
			Usage{Model: "gpt-5", Input: 10, Output: 64, Complete: true}},
		{"openai responses sse in progress only", "text/event-stream", "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"response\":{\"model\":\"gpt-5\",\"usage\":null}}\n\n",
			Usage{Model: "gpt-5"}},
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
		{"the exact row, not a shorter name", Usage{Model: "claude-opus-4-5", Input: 1e6}, 5, true},
		{"opus 4", Usage{Model: "claude-opus-4-20250514", Input: 1e6}, 15, true},
		{"openai cached part of input", Usage{Model: "gpt-5", Input: 1e6, CacheRead: 4e5, CachedIncluded: true, Output: 1e5}, 0.6*1.25 + 0.4*0.125 + 1, true},
		{"gpt-5-mini not gpt-5", Usage{Model: "gpt-5-mini-2025-08-07", Input: 1e6}, 0.25, true},
		{"unknown model uses default", Usage{Model: "mystery-1", Input: 1e6, Output: 1e6}, 750, false},
		{"prefix without dash is not a match", Usage{Model: "gpt-5x", Input: 1e6}, 150, false},
		{"prefix with a dash is not a match either", Usage{Model: "gpt-5-turbo", Input: 1e6}, 150, false},
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
	const def = "default: {input: 1, output: 1, max_output: 10, context: 100}\n"
	tests := []struct{ name, yaml, want string }{
		{"unknown field", "version: x\n" + def + "models: {a: {input: 1, outptu: 2}}\n", "outptu"},
		{"no version", def, "no version"},
		{"no default", "version: x\n", "input and output prices"},
		{"negative price", "version: x\n" + def + "models: {a: {input: -1}}\n", "negative price"},
		{"default without max_output", "version: x\ndefault: {input: 1, output: 1, context: 100}\n", "max_output and context"},
		{"default without context", "version: x\ndefault: {input: 1, output: 1, max_output: 10}\n", "max_output and context"},
		{"negative limit", "version: x\n" + def + "models: {a: {input: 1, max_output: -1}}\n", "negative token limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePrices([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParsePrices(%q) = %v, want an error about %q", tc.yaml, err, tc.want)
			}
		})
	}
	// A model row without limits takes the default row's, which bound every model.
	p, err := ParsePrices([]byte("version: x\n" + def + "models: {a: {input: 2, output: 3}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pr, known := p.Lookup("a-20250101"); !known || pr.MaxOutput != 10 || pr.Context != 100 {
		t.Fatalf("Lookup = %+v %v", pr, known)
	}
}

// TestDefaultRowBoundsEveryModel: the default row's limits are at least every model's, so
// an unknown model is never estimated below a known one.
func TestDefaultRowBoundsEveryModel(t *testing.T) {
	p := prices(t)
	for name, pr := range p.Models {
		if pr.MaxOutput <= 0 || pr.Context <= 0 {
			t.Errorf("%s has no token limits in the built-in table", name)
		}
		if pr.MaxOutput > p.Default.MaxOutput || pr.Context > p.Default.Context {
			t.Errorf("%s has larger limits than the default row", name)
		}
		if pr.Input > p.Default.Input || pr.Output > p.Default.Output || pr.CacheWrite > p.Default.CacheWrite || pr.CacheRead > p.Default.CacheRead {
			t.Errorf("%s is dearer than the default row", name)
		}
	}
}

func TestWorstCase(t *testing.T) {
	p := prices(t)
	tests := []struct {
		name    string
		r       Request
		seen    Usage
		in, out int64
		usd     float64
		known   bool
	}{
		{"output cap from the request, input at the cache-write rate", Request{Model: "claude-sonnet-4-5", Bytes: 1000, MaxOutput: 8000}, Usage{},
			2000, 8000, (2000*3.75 + 8000*15) / 1e6, true},
		{"no cap: the model's limit", Request{Model: "gpt-5"}, Usage{},
			1000, 128000, (1000*1.25 + 128000*10) / 1e6, true},
		{"several choices", Request{Model: "gpt-4o-mini", Bytes: 24, MaxOutput: 100, Choices: 3}, Usage{},
			1024, 300, (1024*0.15 + 300*0.6) / 1e6, true},
		{"input capped at the context window", Request{Model: "claude-opus-4-5", Bytes: 10 << 20}, Usage{},
			200000, 64000, (200000*6.25 + 64000*25) / 1e6, true},
		{"more seen than estimated", Request{Model: "claude-sonnet-4-5", Bytes: 10, MaxOutput: 5},
			Usage{Model: "claude-sonnet-4-5", Input: 5000, CacheRead: 100000, CacheWrite: 20, Output: 9},
			105020, 9, (105020*3.75 + 9*15) / 1e6, true},
		{"openai cached tokens are inside input", Request{Model: "gpt-5", Bytes: 10, MaxOutput: 5},
			Usage{Model: "gpt-5", Input: 5000, CacheRead: 4000, CachedIncluded: true},
			5000, 5, (5000*1.25 + 5*10) / 1e6, true},
		{"unknown model: default price and limits", Request{Model: "mystery-9"}, Usage{},
			1000, 272000, (1000*187.5 + 272000*600) / 1e6, false},
		{"model from the response when the request named none", Request{Bytes: 0, MaxOutput: 10}, Usage{Model: "gpt-4o"},
			1000, 10, (1000*2.5 + 10*10) / 1e6, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, usd, known := p.WorstCase(tc.r, tc.seen)
			if u.Input != tc.in || u.Output != tc.out || math.Abs(usd-tc.usd) > 1e-12 || known != tc.known {
				t.Fatalf("WorstCase = %+v $%v known=%v, want in=%d out=%d $%v known=%v", u, usd, known, tc.in, tc.out, tc.usd, tc.known)
			}
			if cost, _ := p.Cost(tc.seen); usd < cost {
				t.Fatalf("worst case $%v is below what was seen ($%v)", usd, cost)
			}
		})
	}
}

func TestSettle(t *testing.T) {
	m, err := New(prices(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Model: "claude-haiku-4-5", Bytes: 100, MaxOutput: 1000}
	settle := func(u Usage) Charge {
		r, err := m.Reserve(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Settle(u)
	}
	ch := settle(Usage{Model: "claude-haiku-4-5", Input: 10, Output: 20, Complete: true})
	if ch.Estimated || math.Abs(ch.USD-(10*1.0+20*5)/1e6) > 1e-12 {
		t.Fatalf("complete usage: %+v", ch)
	}
	ch = settle(Usage{Model: "claude-haiku-4-5", Input: 10, Output: 2})
	if want := (1100*1.25 + 1000*5) / 1e6; !ch.Estimated || math.Abs(ch.USD-want) > 1e-12 || ch.ReservedUSD != want {
		t.Fatalf("cut-off usage: %+v, want $%v estimated, as reserved", ch, want)
	}
	if s := m.Summary(); s.Calls != 2 || s.Estimated != 1 || s.Partial != 1 || s.InFlight != 0 || s.ReservedUSD != 0 {
		t.Fatalf("summary %+v", s)
	}
}

// TestReserve: calls hold their worst case while in flight; a call whose worst case does
// not fit in what the spend and the calls in flight leave is refused, and says so; a
// settled call holds what it cost, a released one nothing; a budget of 0 refuses nothing.
func TestReserve(t *testing.T) {
	// Worst case of one call: (0 bytes + 1000 framing) × $3.75 + 1000 × $15 = $0.01875.
	one := Request{Model: "claude-sonnet-4-5", MaxOutput: 1000}
	const worst = (1000*3.75 + 1000*15) / 1e6
	tests := []struct {
		name   string
		budget float64
		// steps: "r" reserves (and must succeed), "x" reserves and must be refused,
		// "s" settles the oldest hold with a small usage, "l" releases the oldest hold.
		steps           string
		spent, reserved float64
		inFlight, calls int
	}{
		{"holds add up to the budget", 3 * worst, "rrrx", 0, 3 * worst, 3, 0},
		{"a release frees the hold", 2 * worst, "rrxlr", 0, 2 * worst, 2, 0},
		{"a settle keeps only the cost", 2*worst + 0.00002, "rrxsr", 0.000015, 2 * worst, 2, 1},
		{"no budget: nothing refused", 0, "rrrrrrrrrr", 0, 10 * worst, 10, 0},
		{"one call over the budget", worst / 2, "x", 0, 0, 0, 0},
		{"all settled", worst + 3*0.000015, "rsrsrs", 3 * 0.000015, 0, 0, 3},
		{"the spend counts", worst + 0.00001, "rsx", 0.000015, 0, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(prices(t), tc.budget)
			if err != nil {
				t.Fatal(err)
			}
			var held []*Reservation
			for i, st := range tc.steps {
				switch st {
				case 'r', 'x':
					r, err := m.Reserve(one)
					if (err == nil) != (st == 'r') {
						t.Fatalf("step %d: Reserve err=%v", i, err)
					}
					if err != nil {
						var be *BudgetError
						if !errors.As(err, &be) || !strings.Contains(err.Error(), "worst case $0.018") || !strings.Contains(err.Error(), "max_tokens") {
							t.Fatalf("step %d: refusal %v does not give the worst case and the remedy", i, err)
						}
						continue
					}
					held = append(held, r)
				case 's':
					held[0].Settle(Usage{Model: "claude-sonnet-4-5", Output: 1, Complete: true})
					held[0].Settle(Usage{Model: "claude-sonnet-4-5", Output: 1e6, Complete: true}) // only the first counts
					held = held[1:]
				case 'l':
					held[0].Release()
					held[0].Release()
					held = held[1:]
				}
			}
			s := m.Summary()
			if want := strings.Count(tc.steps, "x"); s.Refused != want {
				t.Fatalf("summary counts %d calls refused over budget, want %d", s.Refused, want)
			}
			if math.Abs(s.SpentUSD-tc.spent) > 1e-12 || math.Abs(s.ReservedUSD-tc.reserved) > 1e-12 || s.InFlight != tc.inFlight || s.Calls != tc.calls {
				t.Fatalf("summary %+v, want spent $%v reserved $%v in flight %d calls %d", s, tc.spent, tc.reserved, tc.inFlight, tc.calls)
			}
		})
	}
}

// TestReserveRace: however many calls reserve and settle at once, the spend never passes
// the budget when each costs at most its worst case.
func TestReserveRace(t *testing.T) {
	const budget = 1.0
	m, err := New(prices(t), budget)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Model: "claude-opus-4-1", MaxOutput: 1000}
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			r, err := m.Reserve(req)
			if err != nil {
				return
			}
			r.Settle(Usage{Model: "claude-opus-4-1", Input: 1000, Output: 1000, Complete: true})
		})
	}
	wg.Wait()
	if s := m.Summary(); s.SpentUSD > budget || s.InFlight != 0 || s.Calls == 0 {
		t.Fatalf("summary %+v", s)
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
	m.Record(Usage{Model: "unknown", Output: 10}) // default row, incomplete: $0.006
	err = m.Check()
	if err == nil || !strings.Contains(err.Error(), "budget of $0.00") {
		t.Fatalf("over budget: %v", err)
	}
	s := m.Summary()
	// The call refused because the budget is spent counts as refused, so the run can
	// say it ran out of budget (it did not fail on its own).
	if s.Calls != 2 || s.UnknownModel != 1 || s.Partial != 1 || s.PriceTable == "" || s.Refused != 1 {
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

// TestDearerVariantsNotPricedAsTheirBase: a model is priced by a row only when it is the
// row's name exactly, or that name followed by a date or -latest; a dearer variant
// (o3-pro, gpt-5-pro, o1-pro, a deep-research model) is never priced as its cheaper base
// by sharing a prefix. Prices are USD per million output tokens.
func TestDearerVariantsNotPricedAsTheirBase(t *testing.T) {
	p := prices(t)
	tests := []struct {
		model  string
		output float64 // what a million output tokens cost
		known  bool
	}{
		{"o3-pro-2025-06-10", 80, true},
		{"o3-pro", 80, true},
		{"gpt-5-pro-2025-10-06", 120, true},
		{"gpt-5-pro", 120, true},
		{"o1-pro", 600, true},
		{"o1-pro-2025-03-19", 600, true},
		{"o3-deep-research", p.Default.Output, false},
		{"o3-deep-research-2025-06-26", p.Default.Output, false},
		{"gpt-5-codex-max", p.Default.Output, false},
		{"claude-opus-4-5-fast", p.Default.Output, false},
		{"gpt-5-2025", p.Default.Output, false},      // not a date
		{"gpt-5-20250807x", p.Default.Output, false}, // not a date
		{"gpt-5-2025-08-07-pro", p.Default.Output, false},
		{"o3-2025-04-16", 8, true},
		{"gpt-5-2025-08-07", 10, true},
		{"gpt-5-mini-2025-08-07", 2, true},
		{"claude-sonnet-4-5-20250929", 15, true},
		{"claude-3-opus-latest", 75, true},
		{"claude-opus-4-1-20250805", 75, true},
		{"gpt-5-chat-latest", 10, true},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			usd, known := p.Cost(Usage{Model: tc.model, Output: 1e6})
			if math.Abs(usd-tc.output) > 1e-9 || known != tc.known {
				t.Fatalf("%s: $%v per million output tokens known=%v, want $%v known=%v", tc.model, usd, known, tc.output, tc.known)
			}
		})
	}
	if p.Default.Output < 600 || p.Default.Input < 150 {
		t.Fatalf("the default row ($%v/$%v) is below o1-pro's list price", p.Default.Input, p.Default.Output)
	}
}

// TestOffPriceSnapshots: a dated snapshot billed above its base model is never priced as
// the base ("a dearer variant is never priced as its base model"), whether the table has
// a row for it or prices it at the default row. Each entry is a snapshot an agent can
// name, with its standard list price per million input and output tokens (and cached
// input, where it has no discount); a new one belongs here with its row.
func TestOffPriceSnapshots(t *testing.T) {
	p := prices(t)
	tests := []struct {
		model                    string
		input, output, cacheRead float64 // list prices, USD per million tokens
		row                      bool    // the table has a row of its own for it
	}{
		// gpt-4o's first snapshot: $5/$15 and no cached-input discount; gpt-4o
		// (2024-08-06 and later) is $2.50/$10.
		{"gpt-4o-2024-05-13", 5, 15, 5, true},
		// Dearer variants whose base has no row: the default row prices them.
		{"chatgpt-4o-latest", 5, 15, 5, false},
		{"o1-preview-2024-09-12", 15, 60, 7.5, false},
		{"gpt-4o-realtime-preview-2024-12-17", 5, 20, 2.5, false},
		{"gpt-4o-audio-preview-2024-12-17", 2.5, 10, 2.5, false},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			pr, known := p.Lookup(tc.model)
			if known != tc.row {
				t.Fatalf("%s: known=%v, want %v (a row of its own, or the default row)", tc.model, known, tc.row)
			}
			if pr.Input < tc.input || pr.Output < tc.output || pr.CacheRead < tc.cacheRead {
				t.Fatalf("%s priced $%v/$%v (cached $%v) per million, below its list price $%v/$%v (cached $%v)",
					tc.model, pr.Input, pr.Output, pr.CacheRead, tc.input, tc.output, tc.cacheRead)
			}
			if base, ok := snapshotBase(tc.model); ok {
				if bp, found := p.Models[base]; found && bp.Input >= tc.input && bp.Output >= tc.output {
					t.Fatalf("%s: the test's list price is not above its base %s's; it is not an off-price snapshot", tc.model, base)
				}
			}
		})
	}
	// The charge follows the row: a million output tokens of the first gpt-4o snapshot
	// cost $15, not gpt-4o's $10.
	if usd, _ := p.Cost(Usage{Model: "gpt-4o-2024-05-13", Output: 1e6}); math.Abs(usd-15) > 1e-9 {
		t.Fatalf("gpt-4o-2024-05-13: $%v per million output tokens, want $15", usd)
	}
}
