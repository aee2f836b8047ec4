package firewall

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// maxChunkLine bounds a chunk-size line (size, extensions) and each trailer line.
const maxChunkLine = 4096

var errBadChunk = errors.New("malformed chunked body")

// copyChunked forwards a chunked body byte for byte, checking its framing, and returns
// the bytes written. The framing is validated, not rewritten, so both ends agree on it.
func copyChunked(dst *bufio.Writer, src *bufio.Reader) (int64, error) {
	var total int64
	for {
		line, err := src.ReadSlice('\n')
		if err != nil {
			return total, fmt.Errorf("failed to read chunk size: %w", err)
		}
		if len(line) > maxChunkLine || len(line) < 3 || line[len(line)-2] != '\r' {
			return total, errBadChunk
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
			return total, errBadChunk
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
			return total, errBadChunk
		}
		n, _ := dst.Write(line)
		total += int64(n)
		if len(line) == 2 {
			return total, nil
		}
	}
}

func parseChunkSize(b []byte) (int64, error) {
	var size int64
	digits := 0
	for _, c := range b {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		case c == ';' || c == ' ' || c == '\t':
			if digits == 0 {
				return 0, errBadChunk
			}
			return size, nil // chunk extensions are forwarded, not interpreted
		default:
			return 0, errBadChunk
		}
		digits++
		if digits > 15 {
			return 0, errBadChunk
		}
		size = size<<4 | int64(v)
	}
	if digits == 0 {
		return 0, errBadChunk
	}
	return size, nil
}
