package http1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxChunkLine bounds a chunk-size line (size, extensions) and each trailer line.
const maxChunkLine = 4096

// ErrBadChunk is a chunked body whose framing is malformed.
var ErrBadChunk = errors.New("malformed chunked body")

// CopyChunked forwards a chunked body byte for byte, checking its framing, and returns
// the bytes written. The framing is validated, not rewritten, so both ends agree on it.
func CopyChunked(dst *bufio.Writer, src *bufio.Reader) (int64, error) {
	var total int64
	for {
		line, err := src.ReadSlice('\n')
		if err != nil {
			return total, fmt.Errorf("failed to read chunk size: %w", err)
		}
		if len(line) > maxChunkLine || len(line) < 3 || line[len(line)-2] != '\r' {
			return total, ErrBadChunk
		}
		size, err := parseChunkSize(line[:len(line)-2])
		if err != nil {
			return total, err
		}
		n, _ := dst.Write(line)
		total += int64(n)
		if size == 0 {
			break
		}
		m, err := io.CopyN(dst, src, size)
		total += m
		if err != nil {
			return total, fmt.Errorf("failed to copy chunk: %w", err)
		}
		crlf, err := src.ReadSlice('\n')
		if err != nil || len(crlf) != 2 || crlf[0] != '\r' {
			return total, ErrBadChunk
		}
		n, _ = dst.Write(crlf)
		total += int64(n)
	}
	for { // trailers, up to the empty line
		line, err := src.ReadSlice('\n')
		if err != nil {
			return total, fmt.Errorf("failed to read trailer: %w", err)
		}
		if len(line) > maxChunkLine || len(line) < 2 || line[len(line)-2] != '\r' {
			return total, ErrBadChunk
		}
		n, _ := dst.Write(line)
		total += int64(n)
		if len(line) == 2 {
			return total, nil
		}
	}
}

// parseChunkSize reads the hex size at the start of a chunk-size line. Extensions after
// ';' (or whitespace) are forwarded, not interpreted; at most 15 digits keep the size
// within an int64.
func parseChunkSize(b []byte) (int64, error) {
	if i := bytes.IndexAny(b, "; \t"); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 || len(b) > 15 {
		return 0, ErrBadChunk
	}
	size, err := strconv.ParseUint(string(b), 16, 64)
	if err != nil {
		return 0, ErrBadChunk
	}
	return int64(size), nil
}

// CopyN is io.CopyN with a caller-owned LimitedReader, to spare an allocation per body.
// Short of n bytes it returns the error that ended the copy, io.EOF if none.
func CopyN(dst io.Writer, src io.Reader, n int64, lr *io.LimitedReader) (int64, error) {
	lr.R, lr.N = src, n
	written, err := io.Copy(dst, lr)
	lr.R = nil
	if written == n {
		return n, nil
	}
	if err == nil {
		err = io.EOF
	}
	return written, err
}
