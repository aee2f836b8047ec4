package firewall

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/bumperdev/bumper/firewall/policy"
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
		var h head
		err := h.read(bufio.NewReaderSize(bytes.NewReader(data), 256), 1024, true)
		if err != nil {
			return
		}
		if h.chunked && h.contentLength >= 0 {
			t.Fatal("accepted both Content-Length and Transfer-Encoding")
		}
		if len(h.raw) > 1024 {
			t.Fatalf("accepted a %d-byte head over the 1024 limit", len(h.raw))
		}
		if !bytes.HasSuffix(h.raw, []byte("\r\n\r\n")) && !bytes.Equal(h.raw, []byte("\r\n")) {
			t.Fatalf("accepted head not ended by an empty line: %q", h.raw)
		}
		for _, c := range h.first[1] {
			if c <= ' ' || c == 0x7f {
				t.Fatalf("control byte in accepted target %q", h.first[1])
			}
		}
		for _, hd := range h.headers {
			if bytes.ContainsAny(hd.value, "\r\n\x00") {
				t.Fatalf("control byte in accepted header %q", hd.value)
			}
		}
	})
}

// FuzzTarget runs the authority splitting and the policy on arbitrary targets: an
// accepted target must be a clean allowed name.
func FuzzTarget(f *testing.F) {
	p, err := policy.New([]string{"allowed.test", "*.allowed.test"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"allowed.test:443", "www.allowed.test:443", "[::1]:443", "2130706433:443", "allowed.test@evil:443", "ALLOWED.test.:443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		host, port, err := splitHostPort(target, 0)
		if err != nil {
			return
		}
		tgt, d := p.CheckHost(host, port, policy.Connect)
		if !d.Allowed {
			return
		}
		if tgt.Name != "allowed.test" && !bytes.HasSuffix([]byte(tgt.Name), []byte(".allowed.test")) {
			t.Fatalf("%q allowed as %q", target, tgt.Name)
		}
		if port != 443 {
			t.Fatalf("%q allowed on port %d", target, port)
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
		n, err := copyChunked(bw, src)
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
