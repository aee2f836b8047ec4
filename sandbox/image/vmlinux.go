package image

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
)

// bzImage setup-header offsets (Documentation/arch/x86/boot.rst). The payload fields
// exist since boot protocol 2.08 (Linux 2.6.30), so every kernel Debian ships has them.
const (
	bzSetupSectsOffset   = 0x1f1
	bzHeaderMagicOffset  = 0x202
	bzVersionOffset      = 0x206
	bzPayloadOffset      = 0x248
	bzPayloadLenOffset   = 0x24c
	bzMinPayloadProtocol = 0x0208
)

// compression is one kernel payload format: its magic and how to undo it.
type compression struct {
	name  string
	magic []byte
	// sizeAppended is true when the kernel build appends the uncompressed size as four
	// little-endian bytes after the stream (every format but gzip, see size_append in
	// scripts/Makefile.lib).
	sizeAppended bool
	// tool is the command that decompresses stdin to stdout when Go's standard library
	// cannot; pkg names the Debian package that ships it.
	tool []string
	pkg  string
}

var compressions = []compression{
	{name: "gzip", magic: []byte{0x1f, 0x8b}},
	{name: "xz", magic: []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}, sizeAppended: true, tool: []string{"xz", "-dc", "--single-stream"}, pkg: "xz-utils"},
	{name: "zstd", magic: []byte{0x28, 0xb5, 0x2f, 0xfd}, sizeAppended: true, tool: []string{"zstd", "-dcq"}, pkg: "zstd"},
	{name: "lz4", magic: []byte{0x02, 0x21, 0x4c, 0x18}, sizeAppended: true, tool: []string{"lz4", "-dcq"}, pkg: "lz4"},
	{name: "bzip2", magic: []byte{'B', 'Z', 'h'}, sizeAppended: true},
	{name: "lzma", magic: []byte{0x5d, 0x00, 0x00}, sizeAppended: true, tool: []string{"xz", "-dc", "--format=lzma"}, pkg: "xz-utils"},
}

var elfMagic = []byte{0x7f, 'E', 'L', 'F'}

// ExtractVmlinux returns the uncompressed ELF kernel inside an x86 bzImage (a Debian
// vmlinuz). Booting it directly saves QEMU's guest the decompression, about 3 s under
// TCG. gzip and bzip2 are undone in Go; xz, lzma, zstd and lz4 need their command-line
// tool, and the error names the Debian package when it is missing.
func ExtractVmlinux(ctx context.Context, bzImage []byte) ([]byte, error) {
	payload, err := bzImagePayload(bzImage)
	if err != nil {
		return nil, err
	}
	var comp *compression
	for i := range compressions {
		if bytes.HasPrefix(payload, compressions[i].magic) {
			comp = &compressions[i]
			break
		}
	}
	if comp == nil {
		return nil, fmt.Errorf("failed to extract vmlinux: the bzImage payload starts with % x, which is no compression format this builder knows (gzip, xz, zstd, lz4, bzip2, lzma)", payload[:min(len(payload), 6)])
	}
	wantSize := -1
	if comp.sizeAppended {
		if len(payload) < 8 {
			return nil, fmt.Errorf("failed to extract vmlinux: the %s payload is only %d bytes", comp.name, len(payload))
		}
		wantSize = int(binary.LittleEndian.Uint32(payload[len(payload)-4:]))
		payload = payload[:len(payload)-4]
	}
	out, err := decompress(ctx, comp, payload)
	if err != nil {
		return nil, err
	}
	if wantSize >= 0 && len(out) != wantSize {
		return nil, fmt.Errorf("failed to extract vmlinux: %s payload decompressed to %d bytes, but the kernel records %d", comp.name, len(out), wantSize)
	}
	if !bytes.HasPrefix(out, elfMagic) {
		return nil, fmt.Errorf("failed to extract vmlinux: the decompressed %s payload is not an ELF file", comp.name)
	}
	return out, nil
}

// bzImagePayload returns the compressed kernel that the setup header points at.
func bzImagePayload(b []byte) ([]byte, error) {
	if len(b) < bzPayloadLenOffset+4 || string(b[bzHeaderMagicOffset:bzHeaderMagicOffset+4]) != "HdrS" {
		return nil, errors.New("failed to extract vmlinux: the file is not an x86 bzImage (no \"HdrS\" setup header); pass the vmlinuz from a linux-image-*-amd64 package")
	}
	if v := binary.LittleEndian.Uint16(b[bzVersionOffset:]); v < bzMinPayloadProtocol {
		return nil, fmt.Errorf("failed to extract vmlinux: boot protocol %d.%02d predates payload fields (need 2.08 or newer)", v>>8, v&0xff)
	}
	setupSects := int(b[bzSetupSectsOffset])
	if setupSects == 0 {
		setupSects = 4
	}
	start := (setupSects + 1) * 512
	off := int(binary.LittleEndian.Uint32(b[bzPayloadOffset:]))
	n := int(binary.LittleEndian.Uint32(b[bzPayloadLenOffset:]))
	if n == 0 {
		return nil, errors.New("failed to extract vmlinux: the bzImage records no compressed payload (payload_length is 0)")
	}
	if start+off < start || start+off+n > len(b) || start+off+n < start {
		return nil, fmt.Errorf("failed to extract vmlinux: the payload (offset %d, %d bytes) lies outside the %d-byte file; the file is truncated or not a bzImage", start+off, n, len(b))
	}
	return b[start+off : start+off+n], nil
}

func decompress(ctx context.Context, comp *compression, payload []byte) ([]byte, error) {
	var r io.Reader
	switch comp.name {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(payload))
		if err != nil {
			return nil, fmt.Errorf("failed to read the gzip kernel payload: %w", err)
		}
		zr.Multistream(false)
		r = zr
	case "bzip2":
		r = bzip2.NewReader(bytes.NewReader(payload))
	default:
		if _, err := exec.LookPath(comp.tool[0]); err != nil {
			return nil, fmt.Errorf("failed to decompress the %s kernel payload: %s is not installed; run apt-get install %s", comp.name, comp.tool[0], comp.pkg)
		}
		cmd := exec.CommandContext(ctx, comp.tool[0], comp.tool[1:]...)
		cmd.Stdin = bytes.NewReader(payload)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("failed to decompress the %s kernel payload with %s: %w: %s", comp.name, comp.tool[0], err, bytes.TrimSpace(stderr.Bytes()))
		}
		return stdout.Bytes(), nil
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("failed to decompress the %s kernel payload: %w", comp.name, err)
	}
	return out, nil
}
