package http1

import (
	"bufio"
	"bytes"
	"testing"
)

// FuzzReadHead feeds arbitrary bytes to the request parser: it must never panic, and a
// head it accepts must be unambiguous.
func FuzzReadHead(f *testing.F) {
	for _, s := range []string{
		"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n",
		"POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"\r\nGET http://[::1]:80/ HTTP/1.1\r\nHost: x\r\n y\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var h Head
		err := h.ReadRequest(bufio.NewReaderSize(bytes.NewReader(data), 256), 1024)
		if err != nil {
			return
		}
		if h.Chunked && h.ContentLength >= 0 {
			t.Fatal("accepted both Content-Length and Transfer-Encoding")
		}
		if len(h.Raw) > 1024 {
			t.Fatalf("accepted a %d-byte head over the 1024 limit", len(h.Raw))
		}
		if !bytes.HasSuffix(h.Raw, []byte("\r\n\r\n")) && !bytes.Equal(h.Raw, []byte("\r\n")) {
			t.Fatalf("accepted head not ended by an empty line: %q", h.Raw)
		}
		for _, c := range h.Target() {
			if c <= ' ' || c == 0x7f {
				t.Fatalf("control byte in accepted target %q", h.Target())
			}
		}
		for _, hd := range h.Headers {
			if bytes.ContainsAny(hd.Value, "\r\n\x00") {
				t.Fatalf("control byte in accepted header %q", hd.Value)
			}
		}
	})
}

// FuzzChunked checks that the chunked-body relay never panics and forwards exactly the
// bytes it consumed, so the two ends of the proxy cannot disagree on the framing.
func FuzzChunked(f *testing.F) {
	f.Add([]byte("4\r\nabcd\r\n0\r\n\r\n"))
	f.Add([]byte("4;ext=1\r\nabcd\r\n0\r\nTrailer: x\r\n\r\n"))
	f.Add([]byte("fffffffffffffffff\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		bw := bufio.NewWriter(&out)
		src := bufio.NewReaderSize(bytes.NewReader(data), 64)
		n, err := CopyChunked(bw, src)
		bw.Flush()
		if int64(out.Len()) != n {
			t.Fatalf("reported %d bytes, wrote %d", n, out.Len())
		}
		if !bytes.HasPrefix(data, out.Bytes()) {
			t.Fatalf("forwarded bytes that were not in the input: %q", out.Bytes())
		}
		if err == nil && !bytes.HasSuffix(out.Bytes(), []byte("\r\n\r\n")) && !bytes.HasSuffix(out.Bytes(), []byte("0\r\n\r\n")) {
			t.Fatalf("accepted a body not ended by an empty line: %q", out.Bytes())
		}
	})
}
