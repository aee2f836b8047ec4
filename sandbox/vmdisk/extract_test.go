package vmdisk

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name, link, body string
	typ              byte
	mode             int64
	uid              int
}

func writeTar(t *testing.T, entries []entry) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: mode, Size: int64(len(e.body)), Uid: e.uid}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// The disk is larger than the archive; the rest is zeros, as on a fresh raw disk.
	buf.Write(make([]byte, 8192))
	p := filepath.Join(t.TempDir(), "out.disk")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExtract(t *testing.T) {
	lim := Limits{MaxBytes: 1000, MaxFiles: 10}
	tests := []struct {
		name        string
		entries     []entry
		wantFiles   map[string]string
		wantSkipped int
		wantErr     error
	}{
		{
			name:      "files and dirs",
			entries:   []entry{{name: "d", typ: tar.TypeDir}, {name: "d/a.txt", body: "A", typ: tar.TypeReg}, {name: "b", body: "B", typ: tar.TypeReg}},
			wantFiles: map[string]string{"d/a.txt": "A", "b": "B"},
		},
		{
			name:        "absolute path",
			entries:     []entry{{name: "/etc/passwd", body: "x", typ: tar.TypeReg}},
			wantSkipped: 1,
		},
		{
			name:        "dot dot",
			entries:     []entry{{name: "a/../../escape", body: "x", typ: tar.TypeReg}},
			wantSkipped: 1,
		},
		{
			name:        "special files",
			entries:     []entry{{name: "dev", typ: tar.TypeChar}, {name: "fifo", typ: tar.TypeFifo}, {name: "hard", link: "x", typ: tar.TypeLink}},
			wantSkipped: 3,
		},
		{
			name:        "escaping symlinks",
			entries:     []entry{{name: "abs", link: "/etc", typ: tar.TypeSymlink}, {name: "up", link: "../x", typ: tar.TypeSymlink}, {name: "sneaky", link: "a/../..", typ: tar.TypeSymlink}},
			wantSkipped: 3,
		},
		{
			name: "write through an inner symlink",
			entries: []entry{
				{name: "here", link: ".", typ: tar.TypeSymlink},
				{name: "here/x", body: "through link", typ: tar.TypeReg},
				{name: "here", body: "replace link", typ: tar.TypeReg},
			},
			wantFiles:   map[string]string{},
			wantSkipped: 2,
		},
		{
			name:    "too many bytes",
			entries: []entry{{name: "big", body: strings.Repeat("x", 1001), typ: tar.TypeReg}},
			wantErr: ErrLimit,
		},
		{
			name:    "too many files",
			entries: []entry{{name: "1", typ: tar.TypeDir}, {name: "2", typ: tar.TypeDir}, {name: "3", typ: tar.TypeDir}, {name: "4", typ: tar.TypeDir}, {name: "5", typ: tar.TypeDir}, {name: "6", typ: tar.TypeDir}, {name: "7", typ: tar.TypeDir}, {name: "8", typ: tar.TypeDir}, {name: "9", typ: tar.TypeDir}, {name: "10", typ: tar.TypeDir}, {name: "11", typ: tar.TypeDir}},
			wantErr: ErrLimit,
		},
		{
			name:      "set-id bits and ownership dropped",
			entries:   []entry{{name: "suid", body: "s", typ: tar.TypeReg, mode: 0o6777, uid: 0}},
			wantFiles: map[string]string{"suid": "s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			disk := writeTar(t, tt.entries)
			dest := filepath.Join(t.TempDir(), "out")
			rep, err := Extract(disk, dest, lim)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Extract = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if len(rep.Skipped) != tt.wantSkipped {
				t.Errorf("skipped %v, want %d", rep.Skipped, tt.wantSkipped)
			}
			for name, body := range tt.wantFiles {
				p := filepath.Join(dest, name)
				b, err := os.ReadFile(p)
				if err != nil || string(b) != body {
					t.Errorf("%s = %q, %v; want %q", name, b, err, body)
				}
				info, _ := os.Stat(p)
				if info.Mode()&(os.ModeSetuid|os.ModeSetgid|0o022) != 0 {
					t.Errorf("%s mode %v keeps set-id or group/world write", name, info.Mode())
				}
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(dest), "escape")); err == nil {
				t.Error("an entry escaped the output directory")
			}
		})
	}
}

// TestExtractReadsTheLatestArchive: a session's guest rewrites the out disk after every
// command from its first byte, without clearing what an earlier, longer archive left
// beyond the new one's end. Extract must read the new archive alone: it stops at the
// end-of-archive blocks every archive ends with (and that the guest writes at the start
// of the disk when /out does not fit).
func TestExtractReadsTheLatestArchive(t *testing.T) {
	long := []entry{
		{name: "big", typ: tar.TypeReg, body: strings.Repeat("x", 5000)},
		{name: "dir", typ: tar.TypeDir},
		{name: "dir/a", typ: tar.TypeReg, body: "a"},
	}
	tests := []struct {
		name  string
		later []byte
		want  []string
	}{
		{"a shorter archive", tarBytes(t, []entry{{name: "b", typ: tar.TypeReg, body: "b"}}), []string{"b"}},
		{"an empty archive", tarBytes(t, nil), nil},
		{"an archive that did not fit, reset", make([]byte, 1024), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			disk := writeTar(t, long)
			f, err := os.OpenFile(disk, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(tt.later, 0); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(t.TempDir(), "out")
			rep, err := Extract(disk, dest, Limits{MaxBytes: 1 << 20, MaxFiles: 10})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			var got []string
			entries, _ := os.ReadDir(dest)
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") || rep.Files != len(tt.want) {
				t.Errorf("extracted %v (report %+v), want %v", got, rep, tt.want)
			}
		})
	}
}

// tarBytes is an archive of entries as the guest writes it: ended by its two zero
// blocks and nothing more.
func tarBytes(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExtractEmptyDisk(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.disk")
	if err := CreateOutDisk(p, 1<<20); err != nil {
		t.Fatal(err)
	}
	rep, err := Extract(p, filepath.Join(t.TempDir(), "out"), Limits{MaxBytes: 1, MaxFiles: 1})
	if err != nil || rep.Files != 0 {
		t.Fatalf("Extract of an untouched disk = %+v, %v; want no files", rep, err)
	}
}

func TestBuildDisk(t *testing.T) {
	for _, bin := range []string{"mkfs.ext4", "debugfs"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (apt-get install e2fsprogs)", bin)
		}
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "hello.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		src     string
		wantErr string
	}{
		{"directory", src, ""},
		{"missing", filepath.Join(src, "nope"), "failed to read workspace"},
		{"a file", filepath.Join(src, "hello.txt"), "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			disk := filepath.Join(t.TempDir(), "ws.ext4")
			err := BuildDisk(t.Context(), tt.src, disk, 0)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("BuildDisk = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("debugfs", "-R", "cat /hello.txt", disk).Output()
			if err != nil || string(out) != "hi\n" {
				t.Fatalf("debugfs cat = %q, %v; want the file's content", out, err)
			}
		})
	}
}
