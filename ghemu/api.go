package ghemu

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/conversation"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/rest"
	"github.com/bumperdev/bumper/ghemu/state"
)

// The Emulator's API for tests and cmd/bumper: what the people and Apps of the world
// would see in GitHub's settings pages, and what GitHub's UI or runners would do.

// BaseURL is the address clients reach the emulator at.
func (e *Emulator) BaseURL() string {
	var u string
	e.store.Do(func(w *state.World) { u = w.BaseURL() })
	return u
}

// AppID is the emulated App's ID.
func (e *Emulator) AppID() int64 {
	var id int64
	e.store.Do(func(w *state.World) { id = w.App().ID })
	return id
}

// AppKeyPath is the PEM file holding the App's private key, as GitHub would let an admin
// download it.
func (e *Emulator) AppKeyPath() string {
	var p string
	e.store.Do(func(w *state.World) { p = w.AppKeyPath() })
	return p
}

// AppKeyPEM is the App's private key in PEM form.
func (e *Emulator) AppKeyPEM() []byte {
	var b []byte
	e.store.Do(func(w *state.World) { b = state.KeyPEM(w.AppKey()) })
	return b
}

// WebhookSecret is the secret the emulator signs deliveries with.
func (e *Emulator) WebhookSecret() string {
	var s string
	e.store.Do(func(w *state.World) { s = w.App().WebhookSecret })
	return s
}

// SetWebhookURL changes where deliveries go (the App's webhook configuration).
func (e *Emulator) SetWebhookURL(u string) {
	e.store.Do(func(w *state.World) { w.SetWebhookURL(u) })
}

// UserToken is the personal access token of a seeded user, or "" if there is none.
func (e *Emulator) UserToken(login string) string {
	var tok string
	e.store.Do(func(w *state.World) {
		if u := w.User(login); u != nil {
			tok = u.Token
		}
	})
	return tok
}

// UserInfo names a seeded person and their personal access token.
type UserInfo struct {
	Login string
	Token string
}

// Users lists the people with personal tokens, sorted by login.
func (e *Emulator) Users() []UserInfo {
	var out []UserInfo
	e.store.Do(func(w *state.World) {
		for _, u := range w.Users() {
			if u.Type == "User" && u.Token != "" {
				out = append(out, UserInfo{Login: u.Login, Token: u.Token})
			}
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Login < out[j].Login })
	return out
}

// TokenInfo is an installation token the emulator minted, for tests that check what a
// run did with its token (that it was revoked, say).
type TokenInfo struct {
	Value          string
	InstallationID int64
	// Repositories are the owner/name of the repositories it is scoped to; empty: all of
	// the installation's.
	Repositories []string
	Permissions  map[string]string
	ExpiresAt    time.Time
	Revoked      bool
}

// InstallationTokens lists the installation tokens minted so far, oldest expiry first.
func (e *Emulator) InstallationTokens() []TokenInfo {
	var out []TokenInfo
	e.store.Do(func(w *state.World) {
		for _, t := range w.Tokens() {
			ti := TokenInfo{Value: t.Value, InstallationID: t.InstallationID, Permissions: maps.Clone(t.Permissions),
				ExpiresAt: t.ExpiresAt, Revoked: t.Revoked}
			for _, id := range t.RepoIDs {
				if rp := w.RepoByID(id); rp != nil {
					ti.Repositories = append(ti.Repositories, rp.FullName())
				}
			}
			out = append(out, ti)
		}
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].ExpiresAt.Before(out[j].ExpiresAt) })
	return out
}

// InstallationID returns the ID of the App's installation on account, or 0.
func (e *Emulator) InstallationID(account string) int64 {
	var id int64
	e.store.Do(func(w *state.World) {
		if in := w.InstallationOn(account); in != nil {
			id = in.ID
		}
	})
	return id
}

// Git is the emulator's git server, for tests that create commits without a clone.
func (e *Emulator) Git() *gitserver.Server { return e.git }

// Routes lists the emulated REST routes as "METHOD /template", in registration order.
func (e *Emulator) Routes() []string { return rest.Routes() }

// OIDCIssuerURL is the issuer ("iss") of the tokens the emulator mints.
func (e *Emulator) OIDCIssuerURL() string { return e.BaseURL() }

// MintOIDCToken signs an Actions-style ID token with the emulator's issuer key.
func (e *Emulator) MintOIDCToken(c OIDCClaims) (string, error) {
	return e.oidc.Mint(e.BaseURL(), c)
}

// Ping sends the "ping" webhook GitHub sends when a webhook is configured.
func (e *Emulator) Ping() {
	e.store.Do(func(w *state.World) {
		app, base := w.App(), w.BaseURL()
		e.hooks.Emit(w, "ping", "", nil, "", render.Obj{"zen": "Keep it logically awesome.", "hook_id": app.ID,
			"hook": render.Obj{"type": "App", "id": app.ID, "name": "web", "active": true,
				"events": app.Events, "app_id": app.ID,
				"config":     render.Obj{"content_type": "json", "insecure_ssl": "0", "url": app.WebhookURL},
				"updated_at": render.TS(app.CreatedAt), "created_at": render.TS(app.CreatedAt),
				"deliveries_url": base + "/app/hook/deliveries",
				"url":            base + "/app/hook/config",
				"ping_url":       base + "/app/hook/pings"}})
	})
}

// DropDeliveries makes the next n deliveries of event (redeliveries included) fail
// without reaching the webhook URL, as a broken connection does: each is recorded with
// status code 0, ready to be listed and redelivered.
func (e *Emulator) DropDeliveries(event string, n int) { e.hooks.Drop(event, n) }

// Faults is the plan of faults the emulator injects (Options.Faults), with the counts
// of what it injected, by kind, and of the requests that came back before the
// Retry-After they were given ran out (EarlyRetries). Without a plan it injects
// nothing, and its counts stay at zero.
func (e *Emulator) Faults() *Faults { return e.faults }

// WaitWebhooks blocks until every webhook queued so far was attempted.
func (e *Emulator) WaitWebhooks(ctx context.Context) error { return e.hooks.Idle(ctx) }

// FailedDeliveries lists the IDs of deliveries whose last attempt did not get a 2xx and
// that were not redelivered successfully since.
func (e *Emulator) FailedDeliveries() []int64 {
	var out []int64
	e.store.Do(func(w *state.World) { out = w.FailedDeliveries() })
	return out
}

// UpdateRun moves a workflow run forward and sends the workflow_run and workflow_job
// webhooks GitHub would. Runs only move forward: queued → in_progress → completed. A
// run the emulator's local runner is executing cannot be moved by hand: cancel it.
func (e *Emulator) UpdateRun(owner, repoName string, runID int64, u RunUpdate) error {
	return e.actions.UpdateRun(owner, repoName, runID, u)
}

// Runs lists a repository's workflow runs with what a runner needs to execute them,
// including the ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN pair of each.
func (e *Emulator) Runs(owner, repoName string) ([]RunInfo, error) {
	return e.actions.Runs(owner, repoName)
}

// Run is one workflow run, as Runs lists it.
func (e *Emulator) Run(owner, repoName string, runID int64) (RunInfo, error) {
	return e.actions.Run(owner, repoName, runID)
}

// WaitRun waits until the run has completed, however it completes (the local runner,
// the cancel route, the control API), and returns it. A run the local runner executed
// has its log, outputs and summary in place by then.
func (e *Emulator) WaitRun(ctx context.Context, owner, repoName string, runID int64) (RunInfo, error) {
	return e.actions.WaitRun(ctx, owner, repoName, runID)
}

// RunLog is the job log of a run the local runner executed: everything its process
// wrote to stdout and stderr, then the runner's own "##[error]…" lines. It grows while
// the run is in progress.
func (e *Emulator) RunLog(owner, repoName string, runID int64) ([]byte, error) {
	return e.actions.RunLog(owner, repoName, runID)
}

// RunSummary is what the run's step wrote to GITHUB_STEP_SUMMARY, once it completed;
// "" if nothing.
func (e *Emulator) RunSummary(owner, repoName string, runID int64) (string, error) {
	return e.actions.RunSummary(owner, repoName, runID)
}

// RerequestCheckRun sends check_run "rerequested", as a user pressing "Re-run" does.
func (e *Emulator) RerequestCheckRun(owner, repoName string, id int64, by string) error {
	var err error
	e.store.Do(func(w *state.World) {
		rp := w.Repo(owner, repoName)
		if rp == nil || rp.CheckRun(id) == nil {
			err = fmt.Errorf("no check run %d in %s/%s", id, owner, repoName)
			return
		}
		if by == "" {
			by = rp.Owner
		}
		e.hooks.Emit(w, "check_run", "rerequested", rp, by, render.Obj{"check_run": render.New(w, nil).HookCheckRun(rp, rp.CheckRun(id))})
	})
	return err
}

// AppIDBySlug is the ID of an App of the world by its slug: the emulator's App, or
// another App whose bot user the seed lists, whose check runs carry that ID and to
// which a required check can be pinned. False for an App the world does not know.
func (e *Emulator) AppIDBySlug(slug string) (int64, bool) {
	var id int64
	e.store.Do(func(w *state.World) { id = w.AppIDBySlug(slug) })
	return id, id != 0
}

// SetBranchProtection protects p.Branch of a repository, replacing what protected it,
// as a repository admin does in the branch's settings. Tests use it to build a
// repository whose protection is missing or too weak. The branch must exist.
func (e *Emulator) SetBranchProtection(owner, repoName string, p SeedProtection) error {
	var err error
	e.store.Do(func(w *state.World) {
		rp := w.Repo(owner, repoName)
		if rp == nil {
			err = fmt.Errorf("no repository %s/%s", owner, repoName)
			return
		}
		if verr := validateProtection(p, w.App().Slug, func(login string) bool {
			u := w.User(login)
			return u != nil && u.Type == "Bot"
		}); verr != nil {
			err = fmt.Errorf("failed to protect %s: %w", p.Branch, verr)
			return
		}
		refs, rerr := e.git.Refs(context.Background(), rp.Owner, rp.Name)
		if rerr != nil {
			err = fmt.Errorf("failed to read the branches of %s: %w", rp.FullName(), rerr)
			return
		}
		if _, ok := refs["refs/heads/"+p.Branch]; !ok {
			err = fmt.Errorf("no branch %s in %s", p.Branch, rp.FullName())
			return
		}
		rp.Protect(p.Branch, newProtection(w, p))
	})
	return err
}

// RemoveBranchProtection unprotects a branch; unprotecting one that is not protected is
// an error, as GitHub's DELETE answers 404 "Branch not protected".
func (e *Emulator) RemoveBranchProtection(owner, repoName, branch string) error {
	var err error
	e.store.Do(func(w *state.World) {
		rp := w.Repo(owner, repoName)
		if rp == nil {
			err = fmt.Errorf("no repository %s/%s", owner, repoName)
			return
		}
		if rp.Protection(branch) == nil {
			err = fmt.Errorf("branch %s of %s is not protected", branch, rp.FullName())
			return
		}
		rp.Unprotect(branch)
	})
	return err
}

// InstallApp installs the App on an account, for the named repositories (none: all of
// them), as its owner does on the App's "Install" page, and sends the "installation
// created" webhook. It returns the installation's ID.
func (e *Emulator) InstallApp(account string, repos []string) (int64, error) {
	var id int64
	var err error
	e.store.Do(func(w *state.World) {
		var in *state.Installation
		if in, err = e.installApp(w, account, repos); err == nil {
			id = in.ID
		}
	})
	return id, err
}

// installApp installs the App on account for repos (none: all of them), inside the
// caller's transaction, with the installation created webhook: InstallApp, the
// control route and the web view's install page.
func (e *Emulator) installApp(w *state.World, account string, repos []string) (*state.Installation, error) {
	acct := w.User(account)
	if acct == nil || (acct.Type != "User" && acct.Type != "Organization") {
		return nil, fmt.Errorf("no user or organisation %q", account)
	}
	if in := w.InstallationOn(account); in != nil {
		return nil, fmt.Errorf("the App is already installed on %s (installation %d)", account, in.ID)
	}
	app := w.App()
	in := &state.Installation{ID: w.NextID(), Account: acct.Login, AllRepos: len(repos) == 0,
		Permissions: maps.Clone(app.Permissions), Events: slices.Clone(app.Events), CreatedAt: w.Timestamp()}
	for _, name := range repos {
		rp := w.Repo(acct.Login, name)
		if rp == nil {
			return nil, fmt.Errorf("no repository %s/%s", acct.Login, name)
		}
		in.RepoIDs = append(in.RepoIDs, rp.ID)
	}
	w.AddInstallation(in)
	e.emitInstallation(w, in, "created")
	return in, nil
}

// ResolveThread resolves (or, with resolved false, unresolves) the review thread whose
// first comment is commentID, as the person by does with the thread's "Resolve
// conversation" button (GitHub's GraphQL resolveReviewThread; its REST API has none),
// and sends pull_request_review_thread resolved or unresolved. by needs write access
// or to be the pull request's author. Resolving a resolved thread changes nothing.
func (e *Emulator) ResolveThread(owner, repoName string, commentID int64, by string, resolved bool) error {
	var err error
	e.store.Do(func(w *state.World) {
		rp := w.Repo(owner, repoName)
		u := w.User(by)
		if rp == nil || u == nil {
			err = fmt.Errorf("no repository %s/%s or no user %q", owner, repoName, by)
			return
		}
		rc := rp.ReviewComment(commentID)
		if rc == nil {
			err = fmt.Errorf("no review comment %d in %s", commentID, rp.FullName())
			return
		}
		is, p := rp.Issue(rc.PullNumber), rp.Pull(rc.PullNumber)
		who := conversation.Actor{Login: u.Login, Role: rp.Role(u)}
		if u.Type == "Bot" {
			who.App = strings.TrimSuffix(u.Login, "[bot]")
		}
		err = e.conv.ResolveThread(w, rp, is, p, rc.Root(), who, resolved)
	})
	return err
}

// PushCommit commits files (nil content deletes a path) on the tip of branch as the
// person by, and moves the branch there as their push would: the push webhook, the
// pull requests on the branch following it (pull_request synchronize for those whose
// head it is), their mergeability computed again. It stands for a push past branch
// protection, an administrator's, so a test can move a protected main ("a busy day on
// main"); the commit's author and committer are by's git identity. It returns the new
// commit.
func (e *Emulator) PushCommit(ctx context.Context, owner, repoName, branch string, files map[string][]byte, message, by string) (string, error) {
	var sha string
	var err error
	e.store.Do(func(w *state.World) {
		rp := w.Repo(owner, repoName)
		if rp == nil || w.User(by) == nil {
			err = fmt.Errorf("no repository %s/%s or no user %q", owner, repoName, by)
			return
		}
		refs, rerr := e.git.Refs(ctx, rp.Owner, rp.Name)
		if rerr != nil {
			err = rerr
			return
		}
		before, ok := refs["refs/heads/"+branch]
		if !ok {
			err = fmt.Errorf("no branch %s in %s", branch, rp.FullName())
			return
		}
		if sha, err = e.git.CommitFiles(ctx, rp.Owner, rp.Name, branch, before, files, message, conversation.Signature(w, by)); err != nil {
			return
		}
		e.conv.RefMoved(ctx, w, rp, "refs/heads/"+branch, before, sha, w.User(by).Login)
	})
	return sha, err
}
