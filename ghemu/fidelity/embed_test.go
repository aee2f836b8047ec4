package fidelity

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestEmbeddedDocuments pins the embedded documents to the published files that
// spec/SOURCES.md names, so a replaced or truncated copy fails here.
func TestEmbeddedDocuments(t *testing.T) {
	tests := []struct {
		name       string
		compressed []byte
		size       int
		sha256     string
	}{
		{"OpenAPI description", openAPIGzip, 13001822, "829b4bebb19a53133289f7b0bc819f4f1118115821db2ca9f25e9ee995a7da2a"},
		{"webhook schema", webhookSchemaGzip, 629797, "ff15ae017ba3b877a44f636806155f986f7b707b31aa7eebde6da1d3366f2840"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := gunzip(tt.name, tt.compressed)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			if len(data) != tt.size || hex.EncodeToString(sum[:]) != tt.sha256 {
				t.Errorf("embedded %s is %d bytes with sha256 %x, want %d bytes with sha256 %s", tt.name, len(data), sum, tt.size, tt.sha256)
			}
		})
	}
	if _, err := gunzip("garbage", []byte("not gzip")); err == nil {
		t.Error("gunzip accepted data that is not gzip")
	}
}
