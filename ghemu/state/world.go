package state

import (
	"crypto/rsa"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/fsutil"
)

// maxDeliveries bounds the delivery log kept in the state.
const maxDeliveries = 5000

// World is everything the emulator holds: the App, accounts, installations, tokens,
// repositories (with their issues, pull requests, checks and runs), webhook deliveries.
// It is reached only inside Store.Do, which holds the lock that guards it; its methods
// are the only way to its collections. Methods that change it mark it changed, and Do
// saves it once fn returns; code that changes a record's fields directly calls
// MarkChanged.
type World struct {
	nextID        int64
	app           App
	users         map[string]*User         // by Key(login)
	installations map[int64]*Installation  // by ID
	repos         map[string]*Repo         // by Key("owner/name")
	tokens        map[string]*Token        // by token value
	deliveries    []*Delivery              // oldest first
	manifestCodes map[string]*ManifestCode // the manifest flow's codes not yet exchanged
	// announced is set once the seeded installations were announced with
	// "installation created" webhooks, which needs the base URL to render them.
	announced bool

	// Not saved in the state file.
	baseURL string
	appKey  *rsa.PrivateKey
	keyPath string
	now     func() time.Time
	changed bool
}

func newWorld() *World {
	return &World{
		users:         map[string]*User{},
		installations: map[int64]*Installation{},
		repos:         map[string]*Repo{},
		tokens:        map[string]*Token{},
		manifestCodes: map[string]*ManifestCode{},
	}
}

// MarkChanged makes Do save the world when the current fn returns.
func (w *World) MarkChanged() { w.changed = true }

// NextID hands out the next ID of any object: GitHub's IDs are unique across kinds here.
func (w *World) NextID() int64 {
	w.nextID++
	w.changed = true
	return w.nextID
}

// Now is the emulator's clock.
func (w *World) Now() time.Time { return w.now() }

// Timestamp is the clock as GitHub stores times: UTC, whole seconds.
func (w *World) Timestamp() time.Time { return w.now().UTC().Truncate(time.Second) }

// BaseURL is where clients reach the emulator ("http://127.0.0.1:8080"); every URL it
// renders derives from it. Not saved: each process sets its own.
func (w *World) BaseURL() string { return w.baseURL }

// SetBaseURL sets BaseURL, without a trailing slash.
func (w *World) SetBaseURL(u string) { w.baseURL = strings.TrimRight(u, "/") }

// App is the hosted App, a copy (its maps and slices are shared: do not change them).
func (w *World) App() App { return w.app }

// AppKey is the App's private key, which signs the App's JWTs.
func (w *World) AppKey() *rsa.PrivateKey { return w.appKey }

// SetApp sets the hosted App, its key unchanged: a new world's seed names it.
func (w *World) SetApp(app App) {
	w.app = app
	w.changed = true
}

// SetWebhookURL changes where the App's deliveries go.
func (w *World) SetWebhookURL(u string) {
	w.app.WebhookURL = u
	w.changed = true
}

// SetWebhookSecret changes the secret deliveries are signed with.
func (w *World) SetWebhookSecret(s string) {
	w.app.WebhookSecret = s
	w.changed = true
}

// ReplaceApp makes app, with its private key, the hosted App, as the manifest flow
// does: the key file is rewritten, and the previous App's installations and tokens go.
func (w *World) ReplaceApp(app App, key *rsa.PrivateKey) error {
	if err := fsutil.WriteFileAtomic(w.keyPath, KeyPEM(key), 0o600); err != nil {
		return fmt.Errorf("failed to keep the App's key: %w", err)
	}
	w.appKey = key
	w.app = app
	w.installations = map[int64]*Installation{}
	w.tokens = map[string]*Token{}
	w.changed = true
	return nil
}

// AppKeyPath is the file holding the App's private key.
func (w *World) AppKeyPath() string { return w.keyPath }

// AppIDBySlug is the ID of an App of the world: the emulator's own, or another App
// known by its bot user, whose ID stands for the App's. 0 for an unknown slug.
func (w *World) AppIDBySlug(slug string) int64 {
	if strings.EqualFold(slug, w.app.Slug) {
		return w.app.ID
	}
	if bot := w.users[Key(slug+"[bot]")]; bot != nil && bot.Type == "Bot" {
		return bot.ID
	}
	return 0
}

// User is the account with login, or nil.
func (w *World) User(login string) *User { return w.users[Key(login)] }

// Users are every account, by login.
func (w *World) Users() []*User {
	out := make([]*User, 0, len(w.users))
	for _, u := range w.users {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return Key(out[i].Login) < Key(out[j].Login) })
	return out
}

// AddUser adds an account (its ID already given).
func (w *World) AddUser(u *User) {
	w.users[Key(u.Login)] = u
	w.changed = true
}

// Installation is the installation with id, or nil.
func (w *World) Installation(id int64) *Installation { return w.installations[id] }

// Installations are the App's installations, by ID.
func (w *World) Installations() []*Installation {
	out := make([]*Installation, 0, len(w.installations))
	for _, in := range w.installations {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// InstallationOn is the App's installation on account, or nil.
func (w *World) InstallationOn(account string) *Installation {
	for _, in := range w.installations {
		if strings.EqualFold(in.Account, account) {
			return in
		}
	}
	return nil
}

// InstallationFor is the installation that covers the repository, or nil.
func (w *World) InstallationFor(r *Repo) *Installation {
	for _, in := range w.Installations() {
		if !strings.EqualFold(in.Account, r.Owner) {
			continue
		}
		if in.AllRepos || slices.Contains(in.RepoIDs, r.ID) {
			return in
		}
	}
	return nil
}

// AddInstallation adds an installation (its ID already given).
func (w *World) AddInstallation(in *Installation) {
	w.installations[in.ID] = in
	w.changed = true
}

// Token is the installation token with value, or nil.
func (w *World) Token(value string) *Token { return w.tokens[value] }

// Tokens are the installation tokens minted and not yet pruned, by value.
func (w *World) Tokens() []*Token {
	out := make([]*Token, 0, len(w.tokens))
	for _, t := range w.tokens {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// AddToken keeps a minted installation token.
func (w *World) AddToken(t *Token) {
	w.tokens[t.Value] = t
	w.changed = true
}

// PruneTokens forgets tokens that expired before cutoff.
func (w *World) PruneTokens(cutoff time.Time) {
	for v, t := range w.tokens {
		if t.ExpiresAt.Before(cutoff) {
			delete(w.tokens, v)
			w.changed = true
		}
	}
}

// TokenCovers reports whether the installation token may reach the repository.
func (w *World) TokenCovers(t *Token, r *Repo) bool {
	in := w.installations[t.InstallationID]
	if in == nil || w.InstallationFor(r) != in {
		return false
	}
	return t.RepoIDs == nil || slices.Contains(t.RepoIDs, r.ID)
}

// Repo is the repository owner/name, or nil.
func (w *World) Repo(owner, name string) *Repo { return w.repos[Key(owner+"/"+name)] }

// RepoByID is the repository with id, or nil.
func (w *World) RepoByID(id int64) *Repo {
	for _, r := range w.repos {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Repos are every repository, by ID.
func (w *World) Repos() []*Repo {
	out := make([]*Repo, 0, len(w.repos))
	for _, r := range w.repos {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// AddRepo adds a repository (its ID, owner and name already given), with no issues,
// pull requests or runs yet.
func (w *World) AddRepo(r *Repo) {
	r.init(w)
	w.repos[Key(r.FullName())] = r
	w.changed = true
}

// RunByID is the workflow run with id in any repository, with its repository; nils
// when there is none.
func (w *World) RunByID(id int64) (*Repo, *WorkflowRun) {
	for _, r := range w.Repos() {
		if run := r.runs[id]; run != nil {
			return r, run
		}
	}
	return nil, nil
}

// RunByJobID is the workflow run whose (only) job has the ID, in any repository.
func (w *World) RunByJobID(jobID int64) (*Repo, *WorkflowRun) {
	for _, r := range w.Repos() {
		if run := r.RunByJob(jobID); run != nil {
			return r, run
		}
	}
	return nil, nil
}

// Delivery is the delivery with id, or nil.
func (w *World) Delivery(id int64) *Delivery {
	for _, d := range w.deliveries {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// Deliveries are the deliveries kept, oldest first (a copy of the list; the records
// are the world's).
func (w *World) Deliveries() []*Delivery { return slices.Clone(w.deliveries) }

// AddDelivery records a delivery (its ID already given), forgetting the oldest beyond
// the 5000 kept.
func (w *World) AddDelivery(d *Delivery) {
	w.deliveries = append(w.deliveries, d)
	if n := len(w.deliveries); n > maxDeliveries {
		w.deliveries = append([]*Delivery(nil), w.deliveries[n-maxDeliveries:]...)
	}
	w.changed = true
}

// FailedDeliveries are the IDs of deliveries whose last attempt did not get a 2xx and
// that were not redelivered successfully since, one per GUID.
func (w *World) FailedDeliveries() []int64 {
	ok := map[string]bool{}
	for _, d := range w.deliveries {
		if !d.Failed() {
			ok[d.GUID] = true
		}
	}
	var out []int64
	seen := map[string]bool{}
	for _, d := range w.deliveries {
		if d.Status != "pending" && d.Failed() && !ok[d.GUID] && !seen[d.GUID] {
			seen[d.GUID] = true
			out = append(out, d.ID)
		}
	}
	return out
}

// ManifestCode is the manifest flow's code, or nil.
func (w *World) ManifestCode(code string) *ManifestCode { return w.manifestCodes[code] }

// AddManifestCode keeps a new code and forgets the expired ones.
func (w *World) AddManifestCode(code string, mc *ManifestCode) {
	for c, old := range w.manifestCodes {
		if !w.now().Before(old.ExpiresAt) {
			delete(w.manifestCodes, c)
		}
	}
	w.manifestCodes[code] = mc
	w.changed = true
}

// DeleteManifestCode forgets a code once exchanged.
func (w *World) DeleteManifestCode(code string) {
	delete(w.manifestCodes, code)
	w.changed = true
}

// Announced reports whether the seeded installations were announced.
func (w *World) Announced() bool { return w.announced }

// SetAnnounced records that they were.
func (w *World) SetAnnounced() {
	w.announced = true
	w.changed = true
}
