package http1

import (
	"bufio"
	"bytes"
	"testing"
)

// BenchmarkReadHead measures parsing a typical request head.
func BenchmarkReadHead(b *testing.B) {
	raw := []byte("GET http://allowed.test:8080/small HTTP/1.1\r\nHost: allowed.test:8080\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n")
	r := bytes.NewReader(raw)
	br := bufio.NewReader(r)
	var h Head
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		r.Reset(raw)
		br.Reset(r)
		if err := h.ReadRequest(br, 32<<10); err != nil {
			b.Fatal(err)
		}
	}
}
