package firewall

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkForwardHTTP measures one keep-alive GET through the proxy to a loopback
// upstream (client, proxy and upstream share the machine, so compare runs, not absolutes).
func BenchmarkForwardHTTP(b *testing.B) {
	body := strings.Repeat("x", 100)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		io.WriteString(w, body)
	}))
	defer up.Close()
	_, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	px := startProxy(b, port, "1", nil)
	c, err := net.Dial("tcp", px.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET http://allowed.test:" + port + "/small HTTP/1.1\r\nHost: allowed.test:" + port + "\r\nUser-Agent: bench\r\n\r\n")
	br := bufio.NewReader(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkTunnel moves 64 MiB from an upstream through a CONNECT tunnel; compare its
// MB/s with BenchmarkDirect, run the same way.
func BenchmarkTunnel(b *testing.B) { benchStream(b, true) }

// BenchmarkDirect is BenchmarkTunnel without the proxy.
func BenchmarkDirect(b *testing.B) { benchStream(b, false) }

func benchStream(b *testing.B, viaProxy bool) {
	const size = 64 << 20
	chunk := make([]byte, 256<<10)
	upAddr, port := serveTCP(b, func(c net.Conn) {
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
	px := startProxy(b, "1", port, nil)
	buf := make([]byte, 256<<10)
	b.SetBytes(size)
	for b.Loop() {
		var c net.Conn
		var err error
		if viaProxy {
			c, err = net.Dial("tcp", px.addr)
			if err == nil {
				io.WriteString(c, "CONNECT allowed.test:"+port+" HTTP/1.1\r\n\r\n")
				status := make([]byte, len(connectEstablished))
				_, err = io.ReadFull(c, status)
			}
		} else {
			c, err = net.Dial("tcp", upAddr)
		}
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.CopyBuffer(io.Discard, struct{ io.Reader }{c}, buf)
		c.Close()
		if n != size {
			b.Fatalf("read %d bytes", n)
		}
	}
}

// BenchmarkConnectNewConn opens a new connection, tunnels to an echo upstream, moves a
// few bytes and closes: the per-connection cost of the CONNECT path.
func BenchmarkConnectNewConn(b *testing.B) {
	_, port := serveTCP(b, func(c net.Conn) { io.Copy(c, c) })
	px := startProxy(b, "1", port, nil)
	req := []byte("CONNECT allowed.test:" + port + " HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n")
	resp := make([]byte, len(connectEstablished)+4)
	b.ReportAllocs()
	for b.Loop() {
		c, err := net.Dial("tcp", px.addr)
		if err != nil {
			b.Fatal(err)
		}
		c.Write(req)
		if _, err := io.ReadFull(c, resp[:len(connectEstablished)]); err != nil {
			b.Fatal(err)
		}
		c.Write([]byte("ping"))
		if _, err := io.ReadFull(c, resp[:4]); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
