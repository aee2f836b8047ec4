package fidelity

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
)

// The documents are stored gzip-compressed (13 MB of JSON becomes under 1 MB) so the
// repository and the bumper binary stay small; spec/SOURCES.md says where they came from.

//go:embed spec/api.github.com.json.gz
var openAPIGzip []byte

//go:embed spec/webhooks.schema.json.gz
var webhookSchemaGzip []byte

// gunzip returns the decompressed bytes of an embedded document.
func gunzip(name string, compressed []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return nil, fmt.Errorf("failed to open embedded %s: %w", name, err)
	}
	defer zr.Close()
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("failed to decompress embedded %s: %w", name, err)
	}
	return data, nil
}
