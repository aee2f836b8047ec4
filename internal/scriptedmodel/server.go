package scriptedmodel

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxBody bounds a request body: 32 MiB, the Messages API's own limit.
const MaxBody = 32 << 20

// Options configure a Server.
type Options struct {
	// Key is the one API key the server accepts: the real key, which only the
	// firewall's gateway holds. Anthropic requests present it in x-api-key (or as an
	// Authorization bearer token), OpenAI requests as an Authorization bearer token;
	// anything else is refused with 401 in the provider's shape. Start refuses an
	// empty Key.
	Key string
	// Addr is where Start listens; empty is a free port on 127.0.0.1.
	Addr string
	// Model is the conversation's model: only requests for it play the script. Empty
	// takes the model of the first request that plays it.
	Model string
	// EveryRequest plays the script to every Messages, Responses and Chat Completions
	// request, whatever its tools, model and tool results: for clients that are not
	// agents, such as a test's own HTTP calls.
	EveryRequest bool
	// SideText answers side requests (Server); empty is "OK.".
	SideText string
	// DoneText answers the conversation once the script is exhausted; empty is
	// "Done.".
	DoneText string
	// Models are the models GET /v1/models lists; empty lists Model, or else one
	// model of the provider asked (claude-sonnet-4-5, gpt-5.5).
	Models []string
	// Now is the clock of created_at fields and records; nil is time.Now.
	Now func() time.Time
}

// Outcome says how the server answered a request.
type Outcome string

// The outcomes of Request.Outcome.
const (
	OutcomeTurn         Outcome = "turn"         // a script turn (Request.Turn), or its scripted failure
	OutcomeSide         Outcome = "side"         // SideText to a request that does not continue the conversation
	OutcomeDone         Outcome = "done"         // DoneText: the script was exhausted
	OutcomeCountTokens  Outcome = "count_tokens" // POST /v1/messages/count_tokens
	OutcomeModels       Outcome = "models"       // GET /v1/models or /v1/models/{id}
	OutcomeUnauthorized Outcome = "unauthorized" // 401: the key was missing or not Options.Key
	OutcomeInvalid      Outcome = "invalid"      // 400, 413 or 415: a request the API would refuse
	OutcomeNotFound     Outcome = "not_found"    // 404: an endpoint the server does not have
)

// Request is the record of one request the server received, for a test's assertions.
// It never holds a key: KeyRedacted and KeySHA256 say which one was presented.
type Request struct {
	Time   time.Time
	Method string
	Path   string // without the query
	Query  string
	// API is the dialect the server answered in: anthropic, openai-responses or
	// openai-chat.
	API       string
	UserAgent string
	// Header holds the request's headers less the credentials (Authorization,
	// X-Api-Key).
	Header http.Header
	// KeyHeader is where the key was found: "x-api-key", "authorization" or "" (none).
	KeyHeader   string
	KeyMatched  bool
	KeyRedacted string // see Redact
	KeySHA256   string // see Fingerprint
	Model       string
	Stream      bool
	Tools       []DeclaredTool
	// ToolResults are the results the request carries, for calls of earlier turns, that
	// no earlier request carried.
	ToolResults []ToolResult
	// UserTexts are the texts of the client's messages the request carries (every
	// message not the assistant's: the user's, and the system messages Claude Code puts
	// in the list for words that came while the model worked), in order (Anthropic
	// Messages only): what a client added to the conversation, such as a steer.
	UserTexts []string
	Outcome   Outcome
	Turn      int // the script turn played, from 0; -1 for none
	// Calls are the tool calls the response made.
	Calls []ToolCall
	// Usage is the usage the response reported; nil for none.
	Usage  *Usage
	Status int
	Note   string // why a request was a side request, refused, or failed
}

// ToolCall is a tool call the server made.
type ToolCall struct {
	ID    string
	Tool  string
	Input string // the JSON input, or a freeform tool's text
}

// Server is a scripted model API on loopback: Anthropic Messages, OpenAI Responses and
// Chat Completions, each as JSON or as a stream (see the package documentation). It is
// an http.Handler; Start serves it on a listener of its own.
//
// One server plays one conversation, and decides which requests continue it:
//
//   - A conversation request declares tools (Anthropic's and OpenAI's tools, or
//     Codex's additional_tools input items) and asks for the conversation's model
//     (Options.Model, or else the model of the first conversation request).
//   - After a turn that made tool calls, a conversation request must also carry the
//     result of at least one of them (tool_result, function_call_output,
//     custom_tool_call_output, a tool message); one that carries none is not the
//     conversation's next step.
//
// A conversation request gets the next turn. Any other request (a title or summary
// asked of a small model, a request without tools, a fork of the conversation) is a
// side request: it gets Options.SideText and does not move the script. Once the
// script is exhausted, conversation requests get Options.DoneText, a final answer, so
// the agent ends rather than the server failing. Options.EveryRequest plays a turn to
// every request instead.
//
// A turn that fails (Turn.Fail) or is cut off (Turn.Truncate) is played all the same,
// and the wait for results stays on the last complete turn's calls: the client's retry
// (the same conversation, without new results) gets the next turn.
type Server struct {
	script   Script
	opts     Options
	sideText string
	doneText string

	mu       sync.Mutex
	next     int               // the next turn to play
	pending  []string          // the calls of the last complete turn, awaiting results
	issued   map[string]string // call id → tool, for every call made
	answered map[string]bool   // call ids whose result a request carried
	model    string            // the conversation's model, once known
	ids      int               // the last id handed out
	requests []Request

	srv *http.Server
	url string
}

// New returns a server that plays script, not yet listening (see Start).
func New(script Script, opts Options) *Server {
	s := &Server{
		script:   append(Script(nil), script...),
		opts:     opts,
		sideText: opts.SideText,
		doneText: opts.DoneText,
		issued:   map[string]string{},
		answered: map[string]bool{},
		model:    opts.Model,
	}
	if s.sideText == "" {
		s.sideText = "OK."
	}
	if s.doneText == "" {
		s.doneText = "Done."
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	return s
}

// Start returns a server that plays script, listening on Options.Addr.
func Start(script Script, opts Options) (*Server, error) {
	s := New(script, opts)
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start listens on Options.Addr (a free loopback port when empty) and serves in the
// background until Close. Call it once.
func (s *Server) Start() error {
	if s.opts.Key == "" {
		return errors.New("failed to start the scripted model server: Options.Key is empty, so no request could pass")
	}
	addr := s.opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("failed to listen on %s: %w", addr, err)
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	s.url = "http://" + ln.Addr().String()
	go s.srv.Serve(ln)
	return nil
}

// Close stops the server, cutting off any response still being written.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	if err := s.srv.Close(); err != nil {
		return fmt.Errorf("failed to close the scripted model server: %w", err)
	}
	return nil
}

// URL is the server's base URL, http://127.0.0.1:PORT, once started: Anthropic's base
// URL (ANTHROPIC_BASE_URL; the SDK adds /v1/messages).
func (s *Server) URL() string { return s.url }

// OpenAIBaseURL is URL()+"/v1", OpenAI's base URL (OPENAI_BASE_URL, a Codex provider's
// base_url; the clients add /responses).
func (s *Server) OpenAIBaseURL() string { return s.url + "/v1" }

// Requests returns the records of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Played is how many of the script's turns were played.
func (s *Server) Played() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Finished says whether every turn of the script was played.
func (s *Server) Finished() bool { return s.Played() == len(s.script) }

// Redact is how a record shows a key: its first four characters when it has at least
// sixteen (a provider prefix such as "sk-a", no secret), and its length.
func Redact(key string) string {
	if len(key) >= 16 {
		return fmt.Sprintf("%s…(%d chars)", key[:4], len(key))
	}
	return fmt.Sprintf("…(%d chars)", len(key))
}

// Fingerprint is the first twelve hex digits of key's SHA-256: a test compares a
// record's KeySHA256 with Fingerprint(sentinel) to see that the sentinel arrived.
func Fingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}

// endpoint is what a request asks for.
type endpoint int

const (
	epNone endpoint = iota
	epMessages
	epCountTokens
	epResponses
	epChat
	epModels
)

// route finds the endpoint and the dialect to answer in: an unknown path is answered
// in the shape of the API its path or headers belong to.
func route(r *http.Request) (endpoint, dialect) {
	p := r.URL.Path
	post := r.Method == http.MethodPost
	switch {
	case p == "/v1/messages" && post:
		return epMessages, dialectAnthropic
	case p == "/v1/messages/count_tokens" && post:
		return epCountTokens, dialectAnthropic
	case p == "/v1/responses" && post:
		return epResponses, dialectResponses
	case p == "/v1/chat/completions" && post:
		return epChat, dialectChat
	}
	d := dialectResponses
	if strings.HasPrefix(p, "/v1/messages") || r.Header.Get("X-Api-Key") != "" || r.Header.Get("Anthropic-Version") != "" {
		d = dialectAnthropic
	}
	if r.Method == http.MethodGet && (p == "/v1/models" || strings.HasPrefix(p, "/v1/models/")) {
		return epModels, d
	}
	return epNone, d
}

// ServeHTTP answers one request (see Server).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	header := r.Header.Clone()
	header.Del("Authorization")
	header.Del("X-Api-Key")
	rec := Request{
		Time:      s.opts.Now(),
		Method:    r.Method,
		Path:      r.URL.Path,
		Query:     r.URL.RawQuery,
		UserAgent: r.UserAgent(),
		Header:    header,
		Turn:      -1,
	}
	ep, d := route(r)
	rec.API = d.String()
	reqID := s.nextID("req_")
	fail := func(outcome Outcome, status int, typ, msg, param, code string) {
		rec.Outcome, rec.Status, rec.Note = outcome, status, msg
		s.record(rec)
		// As the API does: the Anthropic SDK and Claude Code read this header, and
		// without it Claude Code retries a refused key ten times over three minutes.
		w.Header().Set("X-Should-Retry", "false")
		if d.anthropic() {
			writeAnthropicError(w, status, typ, msg, reqID)
		} else {
			writeOpenAIError(w, status, typ, msg, param, code, reqID)
		}
	}
	if ep == epNone {
		if d.anthropic() {
			fail(OutcomeNotFound, http.StatusNotFound, "not_found_error", "Not Found", "", "")
		} else {
			fail(OutcomeNotFound, http.StatusNotFound, "invalid_request_error", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "", "")
		}
		return
	}
	if presented := s.checkKey(&rec, r, d); !rec.KeyMatched {
		switch {
		case d.anthropic() && presented == "":
			fail(OutcomeUnauthorized, http.StatusUnauthorized, "authentication_error", "x-api-key header is required", "", "")
		case d.anthropic():
			fail(OutcomeUnauthorized, http.StatusUnauthorized, "authentication_error", "invalid x-api-key", "", "")
		case presented == "":
			fail(OutcomeUnauthorized, http.StatusUnauthorized, "invalid_request_error", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", "", "")
		default:
			fail(OutcomeUnauthorized, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided: "+Redact(presented)+".", "", "invalid_api_key")
		}
		return
	}
	if ep == epModels {
		s.serveModels(w, r, rec, d, reqID)
		return
	}
	if enc := strings.TrimSpace(r.Header.Get("Content-Encoding")); enc != "" && !strings.EqualFold(enc, "identity") {
		fail(OutcomeInvalid, http.StatusUnsupportedMediaType, "invalid_request_error", fmt.Sprintf("Content-Encoding %q is not supported: send the body as plain JSON", enc), "", "")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		fail(OutcomeInvalid, http.StatusBadRequest, "invalid_request_error", "failed to read the request body: "+err.Error(), "", "")
		return
	}
	if len(body) > MaxBody {
		typ := "invalid_request_error"
		if d.anthropic() {
			typ = "request_too_large"
		}
		fail(OutcomeInvalid, http.StatusRequestEntityTooLarge, typ, fmt.Sprintf("Request exceeds the maximum allowed number of bytes (%d).", MaxBody), "", "")
		return
	}
	var p parsed
	switch ep {
	case epMessages, epCountTokens:
		p, err = parseAnthropic(body, ep == epCountTokens)
	case epResponses:
		p, err = parseResponses(body)
	case epChat:
		p, err = parseChat(body)
	}
	if err != nil {
		inv := &errInvalid{msg: err.Error()}
		errors.As(err, &inv)
		fail(OutcomeInvalid, http.StatusBadRequest, "invalid_request_error", inv.msg, inv.param, "")
		return
	}
	rec.Model, rec.Stream, rec.Tools = p.model, p.stream, p.tools
	if ep == epCountTokens {
		rec.Outcome, rec.Status = OutcomeCountTokens, http.StatusOK
		s.record(rec)
		writeJSON(w, http.StatusOK, obj{{"input_tokens", estimate(len(body))}}, false)
		return
	}
	answer, failure := s.play(p, &rec, d, len(body))
	if failure != nil {
		if failure.Status == http.StatusTooManyRequests || failure.Status >= 500 {
			// Retry at once: the SDKs honour retry-after, and a test need not wait.
			w.Header().Set("Retry-After", "0")
			w.Header().Set("X-Should-Retry", "true")
		} else {
			w.Header().Set("X-Should-Retry", "false")
		}
		if d.anthropic() {
			writeAnthropicError(w, failure.Status, failure.Type, failure.Message, reqID)
		} else {
			writeOpenAIError(w, failure.Status, failure.Type, failure.Message, "", failure.Code, reqID)
		}
		return
	}
	switch d {
	case dialectAnthropic:
		writeAnthropic(w, answer)
	case dialectResponses:
		writeResponses(w, answer)
	case dialectChat:
		writeChat(w, answer)
	}
}

// checkKey records the key the request presents, and whether it is Options.Key; it
// returns the key for the refusal's message.
func (s *Server) checkKey(rec *Request, r *http.Request, d dialect) string {
	var key string
	wellFormed := false // in a header the API reads keys from, in the form it reads them
	if k := r.Header.Get("X-Api-Key"); d.anthropic() && k != "" {
		key, rec.KeyHeader, wellFormed = k, "x-api-key", true
	} else if auth := r.Header.Get("Authorization"); auth != "" {
		rec.KeyHeader = "authorization"
		key = auth
		if len(auth) > 7 && strings.EqualFold(auth[:7], "Bearer ") {
			key, wellFormed = strings.TrimSpace(auth[7:]), true
		}
	}
	if key != "" {
		rec.KeyRedacted, rec.KeySHA256 = Redact(key), Fingerprint(key)
		rec.KeyMatched = wellFormed && s.opts.Key != "" && subtle.ConstantTimeCompare([]byte(key), []byte(s.opts.Key)) == 1
	}
	return key
}

// serveModels answers GET /v1/models and /v1/models/{id} in the provider's shape.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request, rec Request, d dialect, reqID string) {
	models := s.opts.Models
	switch {
	case len(models) > 0:
	case s.opts.Model != "":
		models = []string{s.opts.Model}
	case d.anthropic():
		models = []string{"claude-sonnet-4-5"}
	default:
		models = []string{"gpt-5.5"}
	}
	describe := func(m string) obj {
		if d.anthropic() {
			return obj{{"type", "model"}, {"id", m}, {"display_name", m}, {"created_at", "2025-01-01T00:00:00Z"}}
		}
		return obj{{"id", m}, {"object", "model"}, {"created", 1735689600}, {"owned_by", "scriptedmodel"}}
	}
	if id, ok := strings.CutPrefix(r.URL.Path, "/v1/models/"); ok {
		for _, m := range models {
			if m == id {
				rec.Outcome, rec.Status = OutcomeModels, http.StatusOK
				s.record(rec)
				writeJSON(w, http.StatusOK, describe(m), false)
				return
			}
		}
		rec.Outcome, rec.Status, rec.Note = OutcomeNotFound, http.StatusNotFound, "no model "+id
		s.record(rec)
		if d.anthropic() {
			writeAnthropicError(w, http.StatusNotFound, "not_found_error", "model: "+id, reqID)
		} else {
			writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", fmt.Sprintf("The model '%s' does not exist", id), "model", "model_not_found", reqID)
		}
		return
	}
	var data []obj
	for _, m := range models {
		data = append(data, describe(m))
	}
	rec.Outcome, rec.Status = OutcomeModels, http.StatusOK
	s.record(rec)
	if d.anthropic() {
		writeJSON(w, http.StatusOK, obj{{"data", data}, {"has_more", false}, {"first_id", models[0]}, {"last_id", models[len(models)-1]}}, false)
		return
	}
	writeJSON(w, http.StatusOK, obj{{"object", "list"}, {"data", data}}, false)
}

// play decides what a generating request gets (see Server), moves the script and
// records the request, all under the lock, so that concurrent requests each get a turn
// of their own.
func (s *Server) play(p parsed, rec *Request, d dialect, bodyLen int) (reply, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.requests = append(s.requests, *rec) }()
	rec.ToolResults = s.newResults(p.results)
	rec.UserTexts = p.userTexts
	r := reply{id: s.nextIDLocked(replyIDPrefix[d]), model: p.model, created: s.opts.Now().Unix(), stream: p.stream, includeUsage: p.includeUsage}
	if d == dialectResponses {
		r.textID = s.nextIDLocked("msg_")
	}
	answer := func(outcome Outcome, text, note string) (reply, *Failure) {
		r.text = text
		r.usage = Usage{Input: estimate(bodyLen), Output: estimate(len(text))}
		u := r.usage
		rec.Outcome, rec.Status, rec.Usage, rec.Note = outcome, http.StatusOK, &u, note
		return r, nil
	}
	if why := s.sideReason(p); why != "" {
		return answer(OutcomeSide, s.sideText, why)
	}
	// Results count as carried once the conversation has them, not when a side
	// request shows them.
	for _, res := range rec.ToolResults {
		s.answered[res.CallID] = true
	}
	if s.model == "" {
		s.model = p.model
	}
	if s.next >= len(s.script) {
		s.pending = nil
		return answer(OutcomeDone, s.doneText, fmt.Sprintf("the script's %d turns were all played", len(s.script)))
	}
	t := s.script[s.next]
	rec.Outcome, rec.Turn = OutcomeTurn, s.next
	s.next++
	if t.Fail != nil {
		rec.Status, rec.Note = t.Fail.Status, "scripted failure: "+t.Fail.Message
		return r, t.Fail
	}
	calls, err := t.resolve(d, p.tools, s.nextIDLocked)
	if err != nil {
		f := failureFor(fmt.Errorf("turn %d: %w", rec.Turn, err))
		rec.Status, rec.Note = f.Status, f.Message
		return r, f
	}
	r.text, r.calls, r.truncate = t.Text, calls, t.Truncate
	if t.Usage != nil {
		r.usage = *t.Usage
	} else {
		r.usage = Usage{Input: estimate(bodyLen), Output: estimate(r.contentBytes())}
	}
	u := r.usage
	rec.Usage, rec.Status = &u, http.StatusOK
	for _, c := range calls {
		input := string(c.Input)
		if c.Free {
			input = c.Raw
		}
		rec.Calls = append(rec.Calls, ToolCall{ID: c.ID, Tool: c.Name, Input: input})
	}
	if t.Truncate {
		rec.Note = "truncated: the response was cut off before its end"
		return r, nil
	}
	s.pending = nil
	for _, c := range calls {
		s.pending = append(s.pending, c.ID)
		s.issued[c.ID] = c.Name
	}
	return r, nil
}

var replyIDPrefix = map[dialect]string{dialectAnthropic: "msg_", dialectResponses: "resp_", dialectChat: "chatcmpl-"}

// sideReason says why a request does not continue the conversation, or "" when it does.
func (s *Server) sideReason(p parsed) string {
	if s.opts.EveryRequest {
		return ""
	}
	if len(p.tools) == 0 {
		return "the request declares no tools: not the agent's conversation"
	}
	if s.model != "" && p.model != s.model {
		return fmt.Sprintf("model %q is not the conversation's model %q", p.model, s.model)
	}
	if len(s.pending) == 0 {
		return ""
	}
	for _, res := range p.results {
		for _, id := range s.pending {
			if res.CallID == id {
				return ""
			}
		}
	}
	return fmt.Sprintf("the request carries no result for the last turn's calls (%s)", strings.Join(s.pending, ", "))
}

// newResults are the results that answer calls the server made and that no earlier
// conversation request carried.
func (s *Server) newResults(all []ToolResult) []ToolResult {
	var out []ToolResult
	for _, res := range all {
		if tool, ok := s.issued[res.CallID]; ok && !s.answered[res.CallID] {
			res.Tool = tool
			out = append(out, res)
		}
	}
	return out
}

func (s *Server) record(rec Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
}

func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextIDLocked(prefix)
}

// nextIDLocked hands out ids that are unique in the server and readable in a test's
// output: prefix, "scripted_", a counter.
func (s *Server) nextIDLocked(prefix string) string {
	s.ids++
	return prefix + "scripted_" + strconv.Itoa(s.ids)
}
