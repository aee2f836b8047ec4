package lines

import (
	"slices"
	"strings"
	"testing"
)

type got struct {
	line string
	long bool
}

func TestWriter(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   []got
	}{
		{"lines in one write", 10, []string{"a\nbb\n\nccc"}, []got{{"a", false}, {"bb", false}, {"", false}, {"ccc", false}}},
		{"a line across writes", 10, []string{"ab", "c", "d\ne", "f\n"}, []got{{"abcd", false}, {"ef", false}}},
		{"exactly max", 3, []string{"abc\nd\n"}, []got{{"abc", false}, {"d", false}}},
		{"over max in one write", 3, []string{"abcdef\nxy\n"}, []got{{"abc", true}, {"xy", false}}},
		{"over max across writes, rest skipped", 3, []string{"ab", "cd", "efgh", "ij\nk\n"}, []got{{"abc", true}, {"k", false}}},
		{"over max at the end, no newline", 3, []string{"abcdefg"}, []got{{"abc", true}}},
		{"carriage returns kept", 10, []string{"a\r\n"}, []got{{"a\r", false}}},
		{"nothing", 3, []string{""}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out []got
			w := &Writer{Max: tt.max, Line: func(l []byte, long bool) { out = append(out, got{string(l), long}) }}
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			w.Flush()
			if !slices.Equal(out, tt.want) {
				t.Fatalf("lines %+v, want %+v", out, tt.want)
			}
		})
	}
}

// TestWriterBounded: a program that never writes a newline cannot make the buffer grow.
func TestWriterBounded(t *testing.T) {
	calls := 0
	w := &Writer{Max: 1024, Line: func([]byte, bool) { calls++ }}
	chunk := []byte(strings.Repeat("x", 64<<10))
	for range 256 { // 16 MiB
		w.Write(chunk)
	}
	if cap(w.buf) > 4096 || calls != 1 {
		t.Fatalf("buffer capacity %d, %d lines passed; want at most 4096 and 1", cap(w.buf), calls)
	}
}
