package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func readRequest(raw string, max int) (*Head, error) {
	var h Head
	return &h, h.ReadRequest(bufio.NewReaderSize(strings.NewReader(raw), 256), max)
}

// TestHeaderLineLimit: a head holds at most MaxHeaderLines (62) header lines besides its
// first line, as the refusal and the docs say: 62 pass, 63 are refused, whether the
// first line is a request's or a response's.
func TestHeaderLineLimit(t *testing.T) {
	const a = "allowed.test:80"
	head := func(first string, n int) string {
		return first + "\r\n" + strings.Repeat("X-A: 1\r\n", n) + "\r\n"
	}
	for _, tc := range []struct {
		name  string
		read  func(*Head, *bufio.Reader, int) error
		first string
	}{
		{"request", (*Head).ReadRequest, "GET http://" + a + "/ HTTP/1.1"},
		{"response", (*Head).ReadResponse, "HTTP/1.1 200 OK"},
	} {
		for _, n := range []int{MaxHeaderLines - 1, MaxHeaderLines, MaxHeaderLines + 1} {
			var h Head
			err := tc.read(&h, bufio.NewReaderSize(strings.NewReader(head(tc.first, n)), 256), 4096)
			if n <= MaxHeaderLines {
				if err != nil || len(h.Headers) != n {
					t.Errorf("%s with %d header lines: %v, %d headers read; want it read", tc.name, n, err, len(h.Headers))
				}
				continue
			}
			var he *HeadError
			if !errors.As(err, &he) || !strings.Contains(he.Error(), "more than 62 header lines") {
				t.Errorf("%s with %d header lines: %v, want it refused: more than 62 header lines", tc.name, n, err)
			}
		}
	}
}

// TestReadRequestRefuses covers each malformed-head rule: a *HeadError whose text says
// which rule, for the client's 400.
func TestReadRequestRefuses(t *testing.T) {
	const a = "allowed.test:80"
	tests := []struct{ name, raw, want string }{
		{"bare LF", "GET http://" + a + "/ HTTP/1.1\nHost: " + a + "\n\n", "bare LF"},
		{"bare LF on a header", "GET http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\n\r\n", "bare LF"},
		{"CL and TE", "POST http://" + a + "/ HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n", "smuggling"},
		{"TE and CL", "POST http://" + a + "/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n", "smuggling"},
		{"TE not chunked", "POST http://" + a + "/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "Transfer-Encoding"},
		{"two TE chunked", "POST http://" + a + "/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "Transfer-Encoding"},
		{"conflicting CL", "POST http://" + a + "/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "conflicting Content-Length"},
		{"negative CL", "POST http://" + a + "/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "invalid Content-Length"},
		{"plus CL", "POST http://" + a + "/ HTTP/1.1\r\nContent-Length: +1\r\n\r\n", "invalid Content-Length"},
		{"obs fold", "GET http://" + a + "/ HTTP/1.1\r\nX-A: 1\r\n 2\r\n\r\n", "folding"},
		{"control in target", "GET http://allowed.test\x00.evil/ HTTP/1.1\r\n\r\n", "control character"},
		{"control in header", "GET http://" + a + "/ HTTP/1.1\r\nX-A: a\x01b\r\n\r\n", "control character"},
		{"bad header name", "GET http://" + a + "/ HTTP/1.1\r\nX A: b\r\n\r\n", "not allowed"},
		{"no colon", "GET http://" + a + "/ HTTP/1.1\r\nX-A\r\n\r\n", "malformed header line"},
		{"bad method", "G(T http://" + a + "/ HTTP/1.1\r\n\r\n", "method"},
		{"no version", "GET http://" + a + "/\r\n\r\n", "malformed request line"},
		{"HTTP/2", "GET http://" + a + "/ HTTP/2.0\r\n\r\n", "unsupported protocol version"},
		{"HTTP/0.9", "GET /\r\n\r\n", "malformed request line"},
		{"garbage", "\x16\x03\x01\x02\x00\r\n\r\n", "malformed"},
		{"too many lines", "GET http://" + a + "/ HTTP/1.1\r\n" + strings.Repeat("X-A: 1\r\n", MaxHeaderLines+2) + "\r\n", "more than 62 header lines"},
		{"too large", "GET http://" + a + "/ HTTP/1.1\r\nX-Big: " + strings.Repeat("x", 700) + "\r\n\r\n", "larger than the configured limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readRequest(tc.raw, 640)
			var he *HeadError
			if !errors.As(err, &he) || !strings.Contains(he.Error(), tc.want) {
				t.Fatalf("ReadRequest = %v, want a HeadError with %q", err, tc.want)
			}
		})
	}
	if _, err := readRequest("", 512); !errors.Is(err, io.EOF) {
		t.Errorf("ReadRequest on an empty connection = %v, want io.EOF", err)
	}
	var he *HeadError
	if _, err := readRequest("GET http://"+a+"/ HTTP/1.1\r\nHost: x", 512); err == nil || errors.As(err, &he) {
		t.Errorf("ReadRequest on a cut head = %v, want a read error that is not a HeadError", err)
	}
}

func TestReadRequestFields(t *testing.T) {
	tests := []struct {
		name, raw string
		check     func(h *Head) bool
	}{
		{"leading empty lines skipped", "\r\n\r\nGET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
			func(h *Head) bool {
				return string(h.Method()) == "GET" && string(h.Raw[:3]) == "GET" && h.HostCount == 1 && string(h.Host) == "a.test"
			}},
		{"http/1.0 closes", "GET http://a.test/ HTTP/1.0\r\n\r\n", func(h *Head) bool { return h.HTTP10 && h.Close && h.HostCount == 0 }},
		{"http/1.0 keep-alive", "GET http://a.test/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", func(h *Head) bool { return h.HTTP10 && !h.Close }},
		{"close", "GET http://a.test/ HTTP/1.1\r\nConnection: Keep-Alive, close\r\n\r\n", func(h *Head) bool { return h.Close }},
		{"upgrade", "GET http://a.test/ HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", func(h *Head) bool { return h.Upgrade }},
		{"sized body", "POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", func(h *Head) bool { return h.ContentLength == 5 && h.HasBody() }},
		{"chunked body", "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\nExpect: 100-continue\r\n\r\n",
			func(h *Head) bool { return h.Chunked && h.ContentLength == -1 && h.HasBody() && h.ExpectContinue }},
		{"no body", "GET http://a.test/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n", func(h *Head) bool { return !h.HasBody() }},
		{"two hosts", "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nhost: b.test\r\n\r\n", func(h *Head) bool { return h.HostCount == 2 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := readRequest(tc.raw, 1024)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(h) {
				t.Fatalf("parsed %+v", h)
			}
		})
	}
}

func TestReadResponse(t *testing.T) {
	var h Head
	raw := "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
	if err := h.ReadResponse(bufio.NewReader(strings.NewReader(raw)), 1024); err != nil {
		t.Fatal(err)
	}
	if h.StatusCode() != 204 || string(h.First[2]) != "No Content" || !h.Close {
		t.Fatalf("parsed %+v", h)
	}
	if err := h.ReadResponse(bufio.NewReader(strings.NewReader("HTTP/1.1 20x\r\n\r\n")), 1024); err != nil || h.StatusCode() != 0 {
		t.Fatalf("non-numeric status: %v, code %d", err, h.StatusCode())
	}
	if err := h.ReadResponse(bufio.NewReader(strings.NewReader("HTTP/1.1 2000 OK\r\n\r\n")), 1024); err == nil {
		t.Fatal("accepted a four-digit status")
	}
}

// TestWriteRequestHead checks what the proxy forwards upstream: origin form, no
// hop-by-hop headers (nor those Connection names, nor Expect), the client's version, and
// a Host for an HTTP/1.0 request without one.
func TestWriteRequestHead(t *testing.T) {
	tests := []struct{ name, raw, path, want string }{
		{"hop-by-hop removed",
			"GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nConnection: X-Drop, keep-alive\r\nX-Drop: 1\r\nKeep-Alive: 5\r\nProxy-Authorization: secret\r\nTE: trailers\r\nExpect: 100-continue\r\nAccept: */*\r\n\r\n", "/x",
			"GET /x HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\n\r\n"},
		{"http/1.0 without host", "GET http://a.test:8080/old?q HTTP/1.0\r\n\r\n", "/old?q", "GET /old?q HTTP/1.0\r\nHost: a.test:8080\r\n\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := readRequest(tc.raw, 1024)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			bw := bufio.NewWriter(&out)
			n := WriteRequestHead(bw, h, []byte(tc.path))
			bw.Flush()
			if out.String() != tc.want || n != out.Len() {
				t.Fatalf("wrote %q (%d bytes counted), want %q", out.String(), n, tc.want)
			}
		})
	}
}

func TestWriteResponseHead(t *testing.T) {
	var h Head
	raw := "HTTP/1.0 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\nTrailer: X\r\nContent-Type: text/plain\r\n\r\n"
	if err := h.ReadResponse(bufio.NewReader(strings.NewReader(raw)), 1024); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	n := WriteResponseHead(bw, &h, true)
	bw.Flush()
	want := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
	if out.String() != want || n != out.Len() {
		t.Fatalf("wrote %q (%d bytes counted), want %q", out.String(), n, want)
	}
}

func TestCopyN(t *testing.T) {
	var lr io.LimitedReader
	var out bytes.Buffer
	if n, err := CopyN(&out, strings.NewReader("abcdef"), 4, &lr); n != 4 || err != nil || out.String() != "abcd" || lr.R != nil {
		t.Fatalf("CopyN = %d, %v, %q", n, err, out.String())
	}
	if n, err := CopyN(&out, strings.NewReader("ab"), 4, &lr); n != 2 || !errors.Is(err, io.EOF) {
		t.Fatalf("short CopyN = %d, %v, want 2, io.EOF", n, err)
	}
}
