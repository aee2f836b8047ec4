package http1

import (
	"bufio"
	"bytes"
)

// The writers below write to a bufio.Writer, whose error is sticky and surfaces at
// Flush; they return the bytes written, for the audit log.

// WriteRequestHead writes h, an absolute-form request, in origin form with target path,
// without hop-by-hop headers (those Connection names included) and without Expect (the
// proxy answers it itself). An HTTP/1.0 request stays HTTP/1.0, so the upstream does not
// answer with a chunked body the client cannot read; one without Host gets the target's
// authority as its Host.
func WriteRequestHead(w *bufio.Writer, h *Head, path []byte) int {
	n, _ := w.Write(h.First[0])
	n += WriteString(w, " ")
	m, _ := w.Write(path)
	if h.HTTP10 {
		n += m + WriteString(w, " HTTP/1.0\r\n")
	} else {
		n += m + WriteString(w, " HTTP/1.1\r\n")
	}
	conn, _ := h.Get("connection")
	for _, hd := range h.Headers {
		if IsHopByHop(hd.Name) || listedIn(conn, hd.Name) || EqFold(hd.Name, "expect") {
			continue
		}
		n += writeHeader(w, hd)
	}
	if h.HostCount == 0 {
		host := h.First[1]
		if i := bytes.Index(host, []byte("://")); i >= 0 {
			host = host[i+3:]
		}
		if i := bytes.IndexAny(host, "/?"); i >= 0 {
			host = host[:i]
		}
		n += writeHeader(w, Header{[]byte("Host"), host})
	}
	return n + WriteString(w, "\r\n")
}

// WriteResponseHead relays a response head as HTTP/1.1 without hop-by-hop headers, adding
// Connection: close when closeConn is set.
func WriteResponseHead(w *bufio.Writer, r *Head, closeConn bool) int {
	n, _ := w.WriteString("HTTP/1.1 ")
	m, _ := w.Write(r.First[1])
	n += m + WriteString(w, " ")
	m, _ = w.Write(r.First[2])
	n += m + WriteString(w, "\r\n")
	conn, _ := r.Get("connection")
	for _, hd := range r.Headers {
		if IsHopByHop(hd.Name) || listedIn(conn, hd.Name) {
			continue
		}
		n += writeHeader(w, hd)
	}
	if closeConn {
		n += WriteString(w, "Connection: close\r\n")
	}
	return n + WriteString(w, "\r\n")
}

func writeHeader(w *bufio.Writer, hd Header) int {
	n, _ := w.Write(hd.Name)
	n += WriteString(w, ": ")
	m, _ := w.Write(hd.Value)
	return n + m + WriteString(w, "\r\n")
}

// WriteString writes s and returns its length as written.
func WriteString(w *bufio.Writer, s string) int {
	n, _ := w.WriteString(s)
	return n
}

// IsHopByHop reports whether name is a header a proxy must not forward (RFC 9110 7.6.1),
// proxy headers included.
func IsHopByHop(name []byte) bool {
	switch len(name) {
	case 2:
		return EqFold(name, "te")
	case 7:
		return EqFold(name, "trailer") || EqFold(name, "upgrade")
	case 10:
		return EqFold(name, "connection") || EqFold(name, "keep-alive")
	case 16:
		return EqFold(name, "proxy-connection")
	case 18:
		return EqFold(name, "proxy-authenticate")
	case 19:
		return EqFold(name, "proxy-authorization")
	}
	return false
}

// listedIn reports whether a Connection header value names header name (those are
// hop-by-hop too, RFC 9110 7.6.1).
func listedIn(conn, name []byte) bool {
	for len(conn) > 0 {
		var part []byte
		if i := bytes.IndexByte(conn, ','); i >= 0 {
			part, conn = conn[:i], conn[i+1:]
		} else {
			part, conn = conn, nil
		}
		if bytes.EqualFold(bytes.Trim(part, " \t"), name) {
			return true
		}
	}
	return false
}
