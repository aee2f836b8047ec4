package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/textcut"
)

// field is one member of an obj.
type field struct {
	k string
	v any
}

// obj is a JSON object that keeps its members in the order given, so that what the
// server sends reads like what the APIs send ("type" first) and golden files are stable.
type obj []field

// MarshalJSON encodes the members in order.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := encode(f.k)
		if err != nil {
			return nil, err
		}
		v, err := encode(f.v)
		if err != nil {
			return nil, fmt.Errorf("failed to encode %q: %w", f.k, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encode is json.Marshal without HTML escaping, which the APIs do not do either: a
// tool input holding "<" or "&" reaches the client as written.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// mustEncode encodes what the server built itself, from strings, numbers and raw JSON
// it has validated: it cannot fail.
func mustEncode(v any) []byte {
	b, err := encode(v)
	if err != nil {
		panic(fmt.Sprintf("scriptedmodel: failed to encode a response: %v", err))
	}
	return b
}

// sseWriter writes server-sent events, flushing each one so that the client sees the
// stream as it is written, as from the real API. The first write error (the client
// went away) ends the stream.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// event writes one event; an empty name writes a data line only (Chat Completions).
func (s *sseWriter) event(name string, data any) {
	var payload []byte
	if raw, ok := data.(string); ok {
		payload = []byte(raw)
	} else {
		payload = mustEncode(data)
	}
	s.raw(name, payload)
}

func (s *sseWriter) raw(name string, payload []byte) {
	if s.err != nil {
		return
	}
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(payload)
	b.WriteString("\n\n")
	if _, s.err = s.w.Write(b.Bytes()); s.err == nil {
		s.err = s.rc.Flush()
	}
}

// cut drops the connection mid-stream: what was written is flushed, then the handler
// aborts, so the client sees the stream end without its final events (Turn.Truncate).
func (s *sseWriter) cut() {
	if s.err == nil {
		s.rc.Flush()
	}
	panic(http.ErrAbortHandler)
}

// writeJSON writes a whole JSON body; truncate sends half of it and drops the
// connection.
func writeJSON(w http.ResponseWriter, status int, v any, truncate bool) {
	b := mustEncode(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	if !truncate {
		w.Write(b)
		return
	}
	w.Write(b[:len(b)/2])
	http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// chunks splits s into pieces of at most n bytes, never inside a UTF-8 sequence, the
// way a stream delivers text and tool input a few tokens at a time.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		c := textcut.Bytes(s, n)
		if c == "" { // a character longer than n goes whole
			_, size := utf8.DecodeRuneInString(s)
			c = s[:size]
		}
		out = append(out, c)
		s = s[len(c):]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// chunkSize is how many bytes of text or tool input one delta carries.
const chunkSize = 24

// estimate is a token count for n bytes: about four bytes a token, at least one.
func estimate(n int) int64 { return max(1, int64(n)/4) }
