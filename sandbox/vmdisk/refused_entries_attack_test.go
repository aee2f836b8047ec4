package vmdisk

import (
	"archive/tar"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxJobLog is action/runner's DefaultMaxJobLog: the most of what runs in the VM the
// job log may show in a whole run (docs/security.md).
const maxJobLog = 8 << 20

// TestRefusedEntriesCannotFloodTheLog: the agent fills /out with symlinks whose targets are
// absolute (each refused on the host) under long names. Extract reports every refused
// entry with its name, without bound, and the runner logs the whole list in one line
// of the job log (action/runner/guest.go collectOut: "entries of the VM's /out
// refused"), outside the job log's share: 40,000 entries of 240-byte names (a 20 MB
// archive, far under the guest's 256 MiB cap and the 100,000-entry limit) are 11 MB of
// log; PAX names of 4 KiB make it about 200 MB. The report must stay bounded (the first
// few and a count), whatever the archive holds.
func TestRefusedEntriesCannotFloodTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 20 MB archive")
	}
	const n = 40000
	dir := strings.Repeat("d", 100) + "/" + strings.Repeat("e", 100) + "/"
	p := filepath.Join(t.TempDir(), "out.disk")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for i := range n {
		name := dir + fmt.Sprintf("%038d", i)
		if err := tw.WriteHeader(&tar.Header{Name: name, Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink, Mode: 0o777}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 8192)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep, err := Extract(p, t.TempDir(), Limits{MaxBytes: 256 << 20, MaxFiles: 100000})
	if err != nil {
		t.Fatal(err)
	}
	logged := 0
	for _, s := range rep.Skipped {
		logged += len(s) + 3 // as zerolog writes a string array: quoted, comma
	}
	if logged > maxJobLog {
		t.Errorf("the report of refused entries is %d entries, %d bytes, which the runner logs whole: more than the job log's %d for all the VM's output",
			len(rep.Skipped), logged, maxJobLog)
	}
}
