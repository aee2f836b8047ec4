package demo

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/attest"
)

// The files a run leaves that the demo copies to Out, and where they come from.
var (
	implementFiles = []string{"evidence.json", "evidence.md", attest.BundleFile, "audit.jsonl", "pr.diff"}
	reviewFiles    = []string{"verdict.json"}
	// roundFiles are the revise round's, by the name it left them under: its evidence
	// beside the implementing run's, and the agent's replies.
	roundFiles = map[string]string{"evidence.json": "round-evidence.json", "evidence.md": "round-evidence.md", "replies.json": "replies.json"}
)

// outFiles are the names of every file the demo copies to Out's top.
func outFiles() []string {
	fs := append(slices.Clone(implementFiles), reviewFiles...)
	for _, f := range roundFiles {
		fs = append(fs, f)
	}
	return append(fs, "pull-request.html")
}

// attestationPublicKey is serve's attestation public key in Out.
const attestationPublicKey = "attestation-public-key.pem"

// prepareOut makes Out and its logs directory, and the demo's working directory.
func (d *demo) prepareOut() error {
	d.logs = filepath.Join(d.cfg.Out, "logs")
	if err := os.MkdirAll(d.logs, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", d.logs, err)
	}
	for _, f := range outFiles() {
		// A file of an earlier demo must not pass for this one's.
		if err := os.Remove(filepath.Join(d.cfg.Out, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to remove an earlier demo's %s: %w", f, err)
		}
	}
	work, err := os.MkdirTemp("", "bumper-demo-")
	if err != nil {
		return fmt.Errorf("failed to create the demo's working directory: %w", err)
	}
	d.work = work
	d.closers = append(d.closers, func() { _ = os.RemoveAll(work) })
	return nil
}

// logFile opens a log in Out/logs, closed with the demo.
func (d *demo) logFile(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(d.logs, name))
	if err != nil {
		return nil, fmt.Errorf("failed to create the log %s: %w", name, err)
	}
	d.closers = append(d.closers, func() { _ = f.Close() })
	return f, nil
}

// collect copies the runs' files to Out: the implementing run's evidence, audit log and
// diff, the verdict on the pull request's head (the last review's), the round's evidence
// and replies, every file of each run under runs/, the job logs, and the pull request's
// page as the web view serves it.
func (d *demo) collect() ([]string, error) {
	var files []string
	copyRun := func(run *ghemu.RunInfo, top map[string]string, name string) error {
		if run == nil {
			return nil
		}
		src := filepath.Join(d.runsOut, strconv.FormatInt(run.ID, 10))
		dst := filepath.Join(d.cfg.Out, "runs", name)
		if err := os.RemoveAll(dst); err != nil {
			return fmt.Errorf("failed to clear %s: %w", dst, err)
		}
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			return nil // the run never started
		}
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			return fmt.Errorf("failed to copy run %d's files: %w", run.ID, err)
		}
		for f, to := range top {
			if _, err := os.Stat(filepath.Join(src, f)); err != nil && run.Conclusion != "success" {
				continue // a failed run may have stopped before writing it
			}
			if err := copyFile(filepath.Join(src, f), filepath.Join(d.cfg.Out, to)); err != nil {
				return err
			}
			if p := filepath.Join(d.cfg.Out, to); !slices.Contains(files, p) {
				files = append(files, p)
			}
		}
		if log, err := d.e.RunLog(d.owner, d.repo, run.ID); err == nil {
			_ = os.WriteFile(filepath.Join(d.logs, name+"-job.log"), log, 0o644)
		}
		return nil
	}
	runs := []runCopy{{d.implRun, same(implementFiles), "implement"}, {d.reviewRun, same(reviewFiles), "review"}}
	if d.conv != nil {
		runs = append(runs, runCopy{d.conv.run, roundFiles, "revise"}, runCopy{d.conv.reviewRun, same(reviewFiles), "review-2"})
	}
	for _, r := range runs {
		if err := copyRun(r.run, r.top, r.name); err != nil {
			return nil, err
		}
	}
	slices.Sort(files)
	if page, err := fetch(d.pullURL); d.pullURL != "" && err == nil {
		p := filepath.Join(d.cfg.Out, "pull-request.html")
		if err := os.WriteFile(p, page, 0o644); err == nil {
			files = append(files, p)
		}
	}
	return files, nil
}

// runCopy is a run whose files collect copies: those at Out's top (by the name the run
// left them under), and all of them under runs/name.
type runCopy struct {
	run  *ghemu.RunInfo
	top  map[string]string
	name string
}

// same maps each name to itself.
func same(names []string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("failed to read the run's %s: %w", filepath.Base(src), err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("failed to write %s: %w", dst, err)
	}
	return nil
}

func fetch(u string) ([]byte, error) {
	resp, err := http.Get(u) //nolint:gosec,noctx // the emulator's own page, on loopback
	if err != nil {
		return nil, fmt.Errorf("failed to fetch %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("failed to fetch %s: %s", u, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// explain is what a failed step's reader needs: the end of the job log of the run the
// demo was waiting for, and the end of serve's log.
func (d *demo) explain() string {
	var b strings.Builder
	if d.e != nil && d.current != nil {
		log, _ := d.e.RunLog(d.owner, d.repo, d.current.ID)
		fmt.Fprintf(&b, "The end of workflow run %d's job log (all of it: %s):\n%s\n", d.current.ID,
			filepath.Join(d.logs, "failed-job.log"), tail(string(log), 40))
		_ = os.WriteFile(filepath.Join(d.logs, "failed-job.log"), log, 0o644)
	}
	if log, err := os.ReadFile(filepath.Join(d.logs, "serve.log")); err == nil && len(log) > 0 {
		fmt.Fprintf(&b, "serve's warnings and errors (all of its log: %s):\n%s\n", filepath.Join(d.logs, "serve.log"), tail(problems(string(log)), 15))
	}
	return b.String()
}

// problems are the warning and error lines of a zerolog JSON log.
func problems(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"level":"warn"`) || strings.Contains(l, `"level":"error"`) {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
