package runner

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/gates"
	"github.com/bumperdev/bumper/action/publish"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/internal/fsutil"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// GatesCheckName is the check run that says what of the pushed head needs a person.
const GatesCheckName = "bumper/gates"

// maxGateDiff bounds the diff the gates read; the workspace bounds the agent's anyway.
const maxGateDiff = 64 << 20

// maxLockFile bounds one lock file the dependencies gate reads whole.
const maxLockFile = 32 << 20

// gate runs the output gates (action/gates) on the host over what the push would
// publish: the diff from..head and its commits as rewritten, and the texts posted for
// the agent (its decision ledger and replies, as the VM left them). Their results go
// into the evidence. A blocking finding fails the run before anything is pushed: the
// reason says which gate and where (a secret masked), the agent's work is kept in the
// artifact as a git bundle, and the diff is not (it would quote the secret).
func (r *run) gate(ctx context.Context, ws gitRepo, outDir, from, head string) (*gates.Result, string, error) {
	in, err := gateInput(ctx, ws, outDir, from, head)
	if err != nil {
		return nil, "", failWith(evidence.OutcomeError, "failed to read what the push would publish for the output gates; nothing was pushed: %w", err)
	}
	res := gates.Check(ctx, in, r.gatesConfig())
	r.rec.ev.Gates = res
	if secrets := res.Secrets(); len(secrets) > 0 {
		// What the gate found in the diff may be quoted in what the run keeps (the
		// agent's transcript, its ledger) and may be printed later: masked in both.
		for _, s := range secrets {
			r.cfg.Mask(s)
		}
		if err := maskKept(r.rec.out, secrets); err != nil {
			return res, "", failWith(evidence.OutcomeError, "failed to mask the secrets the output gates found in the run's artifact; nothing was pushed: %w", err)
		}
	}
	block, review := res.Blocking(), res.ForReview()
	if len(block) > 0 {
		kept := "the work is in the run's artifact as " + WorkBundleFile
		if err := copyFile(filepath.Join(outDir, workspace.BundleName), filepath.Join(r.rec.out, WorkBundleFile)); err != nil {
			kept = "the work could not be kept in the artifact: " + err.Error()
		}
		return res, "", failWith(evidence.OutcomeFailure, "the output gates block the push: %s; nothing was pushed (%s)", gates.Summary(block, 5), kept)
	}
	detail := fmt.Sprintf("%d file(s), %d commit(s): no blocking finding, %d for review, %d dependenc(ies)", len(in.Files), len(in.Commits), len(review), len(res.Dependencies))
	if res.OSV != nil && !res.OSV.Checked {
		detail += "; OSV not reached"
	}
	return res, detail, nil
}

// gitRepo is the host-side repository the gates read (workspace.Workspace).
type gitRepo interface {
	Git(ctx context.Context, config []string, maxOut int64, args ...string) ([]byte, error)
}

// gateInput reads the diff, the commits, and the agent's texts from outDir (what the
// VM left in /out).
func gateInput(ctx context.Context, ws gitRepo, outDir, from, head string) (gates.Input, error) {
	var in gates.Input
	diff, err := ws.Git(ctx, nil, maxGateDiff, append(gates.DiffArgs, from+"..."+head, "--")...)
	if err != nil {
		return in, err
	}
	if in.Files, err = gates.ParseDiff(diff); err != nil {
		return in, err
	}
	if in.Locks, err = gateLocks(ctx, ws, from, head, in.Files); err != nil {
		return in, err
	}
	log, err := ws.Git(ctx, nil, maxGateDiff, "log", "-z", "--no-color", "--format=%H%n%B", from+".."+head, "--")
	if err != nil {
		return in, err
	}
	for _, rec := range strings.Split(string(log), "\x00") {
		if sha, msg, ok := strings.Cut(rec, "\n"); ok {
			in.Commits = append(in.Commits, gates.Commit{SHA: sha, Message: msg})
		}
	}
	for _, name := range []string{evidence.DecisionsFile, evidence.RepliesFile} {
		// A file that is absent, too large or not regular is refused where it is read
		// for posting: nothing of it is posted, so there is nothing to check.
		if data, err := readSmall(filepath.Join(outDir, filepath.Base(name)), 1<<20); err == nil {
			in.Texts = append(in.Texts, gates.Text{Name: filepath.Base(name), Body: string(data)})
		}
	}
	return in, nil
}

// maskKept masks secrets (gates.MaskFound) in every file the run has kept in out so
// far, rewriting a file that held one whole (fsutil.WriteFileAtomic). Files with a
// NUL byte too: the agent's transcript is binary as soon as it prints one, and a file
// the runner keeps holds no secret of its own to break.
func maskKept(out string, secrets []string) error {
	return filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		masked, found := gates.MaskFound(data, secrets)
		if !found {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return fsutil.WriteFileAtomic(p, masked, info.Mode().Perm())
	})
}

// gateLocks reads each lock file the diff changes whole, at the head and at the diff's
// base (the merge base of from and head, where base...head starts). A file too large
// to read goes to the gate with why, and the gate says its pins were not checked.
func gateLocks(ctx context.Context, ws gitRepo, from, head string, files []gates.File) ([]gates.Lock, error) {
	var locks []gates.Lock
	base := ""
	for _, f := range files {
		if f.Status == gates.StatusDeleted || f.Symlink || !gates.IsLockFile(f.Path) {
			continue
		}
		if base == "" {
			out, err := ws.Git(ctx, nil, 1<<10, "merge-base", from, head)
			if err != nil {
				return nil, err
			}
			base = strings.TrimSpace(string(out))
		}
		// cat-file, not show: the raw blob, never a textconv of it.
		l := gates.Lock{Path: f.Path}
		if l.Head, l.Err = ws.Git(ctx, nil, maxLockFile, "cat-file", "blob", head+":"+f.Path); l.Err == nil && f.Status != gates.StatusAdded {
			old := f.Path
			if f.OldPath != "" {
				old = f.OldPath
			}
			// A base without the file (a rename git did not see) reads as none: every
			// pin at the head is then new to the gate.
			l.Base, _ = ws.Git(ctx, nil, maxLockFile, "cat-file", "blob", base+":"+old)
		}
		locks = append(locks, l)
	}
	return locks, nil
}

// gatesConfig is the repository's settings for the gates: its protected paths (nil:
// the defaults), the other gates' actions (gates:), its allowlist for links, GitHub's
// host, and OSV's URL.
func (r *run) gatesConfig() gates.Config {
	p := r.grant.policy
	cfg := gates.Config{Allowlist: p.Allowlist, OSVURL: r.cfg.OSVURL}
	if u, err := url.Parse(r.cfg.ServerURL); err == nil && u.Hostname() != "" {
		cfg.GitHubHost = u.Hostname()
	}
	for g, a := range map[gates.Gate]*string{gates.GateSecrets: p.Gates.Secrets, gates.GateDependencies: p.Gates.Dependencies, gates.GateLinks: p.Gates.Links} {
		if a != nil {
			if cfg.Actions == nil {
				cfg.Actions = map[gates.Gate]gates.Action{}
			}
			cfg.Actions[g] = gates.Action(*a)
		}
	}
	if p.ProtectedPaths != nil {
		cfg.Protected = make([]gates.Rule, 0, len(p.ProtectedPaths))
		for _, rule := range p.ProtectedPaths {
			a := gates.ActionReview
			if rule.Action == repoconfig.ProtectBlock {
				a = gates.ActionBlock
			}
			cfg.Protected = append(cfg.Protected, gates.Rule{Paths: rule.Paths, Action: a})
		}
	}
	return cfg
}

// gatesCheckRun writes bumper/gates on the pushed head: success when nothing needs a
// person, failure listing what does (a writer's approving review of that head is what
// turns it green). Branch protection can require it.
func (r *run) gatesCheckRun(ctx context.Context, head string, res *gates.Result) error {
	owner, name, _ := strings.Cut(r.cfg.WorkItem.Repository, "/")
	review := res.ForReview()
	conclusion, title := "success", "No finding needs a person"
	if len(review) > 0 {
		conclusion, title = "failure", fmt.Sprintf("%d finding(s) need a person: a writer's approving review of this head clears them", len(review))
	}
	ev := *r.rec.ev
	ev.Gates = res
	summary := evidencemd.Gates(&ev, evidencemd.CheckRunSummaryLimit)
	now := github.Timestamp{Time: r.cfg.Now().UTC()}
	ext := fmt.Sprintf("%s#%d/attempt-%d/gates", r.cfg.WorkItem.Repository, r.cfg.WorkItem.Issue, r.cfg.Attempt)
	opts := github.CreateCheckRunOptions{Name: GatesCheckName, HeadSHA: head, ExternalID: github.String(ext),
		Status: github.String("completed"), Conclusion: github.String(conclusion), CompletedAt: &now,
		Output: &github.CheckRunOutput{Title: github.String(title), Summary: github.String(summary)}}
	if r.rec.ev.Trigger.RunID > 0 && r.cfg.ServerURL != "" {
		opts.DetailsURL = github.String(strings.TrimRight(r.cfg.ServerURL, "/") + "/" + r.cfg.WorkItem.Repository + "/actions/runs/" + strconv.FormatInt(r.rec.ev.Trigger.RunID, 10))
	}
	if _, err := publish.CreateCheckRunOnce(ctx, r.grant.gh, owner, name, opts, 0); err != nil {
		return fmt.Errorf("failed to write the %s check run on %s: %w", GatesCheckName, head, err)
	}
	return nil
}

// copyFile copies a file of the host (the work's bundle) into the artifact.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("failed to open %s: %w", filepath.Base(from), err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("failed to create %s: %w", filepath.Base(to), err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		return fmt.Errorf("failed to copy %s: %w", filepath.Base(from), err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("failed to write %s: %w", filepath.Base(to), err)
	}
	return nil
}
