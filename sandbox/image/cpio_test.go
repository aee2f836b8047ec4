package image

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
)

// cpioEntry is one entry read back from a newc archive.
type cpioEntry struct {
	name      string
	mode      uint32
	rdevMajor uint32
	rdevMinor uint32
	data      string
}

// readCPIO parses a newc archive independently of the writer, checking magic, the
// 4-byte alignment and the trailer.
func readCPIO(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	align := func(n int) int { return (n + 3) &^ 3 }
	for {
		if off+110 > len(b) {
			t.Fatalf("archive ends at %d without a trailer", off)
		}
		h := b[off : off+110]
		if string(h[:6]) != "070701" {
			t.Fatalf("bad magic %q at %d", h[:6], off)
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
			if err != nil {
				t.Fatalf("bad header field %d at %d: %v", i, off, err)
			}
			return uint32(v)
		}
		mode, size, rmaj, rmin, namesize := field(1), field(6), field(9), field(10), field(11)
		name := string(b[off+110 : off+110+int(namesize)-1])
		if b[off+110+int(namesize)-1] != 0 {
			t.Fatalf("name of %q is not NUL-terminated", name)
		}
		off = align(off + 110 + int(namesize))
		data := string(b[off : off+int(size)])
		off = align(off + int(size))
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return out
		}
		out = append(out, cpioEntry{name: name, mode: mode, rdevMajor: rmaj, rdevMinor: rmin, data: data})
	}
}

func TestCPIOWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	cw := newCPIOWriter(&buf)
	steps := []error{
		cw.Dir("bin", 0o755),
		cw.File("bin/busybox", 0o755, []byte("not really busybox")),
		cw.Symlink("bin/sh", "busybox"),
		cw.Dir("dev", 0o755),
		cw.CharDev("dev/console", 0o600, 5, 1),
		cw.File("init", 0o755, []byte("#!/bin/sh\n")),
		cw.File("etc-empty", 0o644, nil),
		cw.File("odd", 0o644, []byte("abcde")), // size not a multiple of 4
		cw.Close(),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := []cpioEntry{
		{name: "bin", mode: 0o040755},
		{name: "bin/busybox", mode: 0o100755, data: "not really busybox"},
		{name: "bin/sh", mode: 0o120777, data: "busybox"},
		{name: "dev", mode: 0o040755},
		{name: "dev/console", mode: 0o020600, rdevMajor: 5, rdevMinor: 1},
		{name: "init", mode: 0o100755, data: "#!/bin/sh\n"},
		{name: "etc-empty", mode: 0o100644},
		{name: "odd", mode: 0o100644, data: "abcde"},
	}
	got := readCPIO(t, buf.Bytes())
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read back\n%v\nwant\n%v", got, want)
	}

	t.Run("busybox cpio lists it", func(t *testing.T) {
		testgate.Command(t, "busybox", "busybox-static")
		bb, err := exec.LookPath("busybox")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bb, "cpio", "-t")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("busybox cpio -t: %v\n%s", err, stderr.Bytes())
		}
		var names []string
		for _, e := range want {
			names = append(names, e.name)
		}
		gotNames := strings.Fields(string(out))
		sort.Strings(names)
		sort.Strings(gotNames)
		if strings.Join(gotNames, " ") != strings.Join(names, " ") {
			t.Errorf("busybox cpio -t listed %v, want %v", gotNames, names)
		}
	})
}

func TestCPIOWriterRejectsBadNames(t *testing.T) {
	tests := []struct {
		name    string
		entry   string
		wantErr string
	}{
		{name: "empty", entry: "", wantErr: "clean relative path"},
		{name: "dot dot", entry: "a/../../etc/passwd", wantErr: "clean relative path"},
		{name: "trailing slash", entry: "bin/", wantErr: "clean relative path"},
		{name: "duplicate", entry: "init", wantErr: "already in it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cw := newCPIOWriter(io.Discard)
			if err := cw.File("init", 0o755, nil); err != nil {
				t.Fatal(err)
			}
			err := cw.File(tt.entry, 0o644, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("File(%q) error = %v, want one containing %q", tt.entry, err, tt.wantErr)
			}
		})
	}
}
