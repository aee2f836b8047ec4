package ghemu

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

// defaultLabelColor is the color GitHub gives a label created without one.
const defaultLabelColor = "ededed"

// applySeed builds a fresh world from a validated seed, creating the git repositories.
func applySeed(w *state.World, git *gitserver.Server, s *Seed) error {
	now := w.Timestamp()
	app := s.App
	if app.ID == 0 {
		app.ID = DefaultAppID
	}
	if app.Slug == "" {
		app.Slug = DefaultAppSlug
	}
	if app.Name == "" {
		app.Name = "Bumper"
	}
	if app.Permissions == nil {
		app.Permissions = DefaultAppPermissions()
	}
	if app.Events == nil {
		app.Events = []string{"issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment",
			"pull_request_review_thread", "push", "check_run", "workflow_run", "workflow_job"}
	}
	owner := app.Owner
	if owner == "" && len(s.Organizations) > 0 {
		owner = s.Organizations[0]
	}
	w.SetApp(state.App{ID: app.ID, Slug: app.Slug, Name: app.Name, Owner: owner,
		ClientID: fmt.Sprintf("Iv1.%016x", app.ID), Permissions: app.Permissions,
		Events: app.Events, CreatedAt: now})
	for _, u := range s.Users {
		tok := u.Token
		if tok == "" {
			tok = state.RandomToken("ghp_")
		}
		typ := "User"
		if u.Bot {
			typ = "Bot"
		}
		w.AddUser(&state.User{ID: w.NextID(), Login: u.Login, Type: typ, Name: u.Name, Email: u.Email, Token: tok})
	}
	for _, o := range s.Organizations {
		w.AddUser(&state.User{ID: w.NextID(), Login: o, Type: "Organization"})
	}
	bot := app.Slug + "[bot]"
	w.AddUser(&state.User{ID: w.NextID(), Login: bot, Type: "Bot"})
	for _, sr := range s.Repositories {
		if err := seedRepo(w, git, sr, now); err != nil {
			return err
		}
	}
	for _, si := range s.Installations {
		in := &state.Installation{ID: w.NextID(), Account: w.User(si.Account).Login,
			AllRepos: len(si.Repositories) == 0, Permissions: si.Permissions,
			Events: app.Events, CreatedAt: now}
		if in.Permissions == nil {
			in.Permissions = app.Permissions
		}
		for _, name := range si.Repositories {
			in.RepoIDs = append(in.RepoIDs, w.Repo(si.Account, name).ID)
		}
		w.AddInstallation(in)
	}
	return nil
}

func seedRepo(w *state.World, git *gitserver.Server, sr SeedRepository, now time.Time) error {
	branch := sr.DefaultBranch
	if branch == "" {
		branch = "main"
	}
	ownerLogin := w.User(sr.Owner).Login
	rp := &state.Repo{ID: w.NextID(), Owner: ownerLogin, Name: sr.Name, Private: sr.Private,
		Description: sr.Description, DefaultBranch: branch, CreatedAt: now, UpdatedAt: now, PushedAt: now}
	w.AddRepo(rp)
	for login, perm := range sr.Collaborators {
		rp.AddCollaborator(login, perm)
	}
	for _, p := range sr.Protected {
		rp.Protect(p.Branch, newProtection(w, p))
	}
	for _, l := range sr.Labels {
		color := strings.TrimPrefix(l.Color, "#")
		if color == "" {
			color = defaultLabelColor
		}
		rp.AddLabel(&state.Label{ID: w.NextID(), Name: l.Name, Color: color, Description: l.Description})
	}
	files := map[string][]byte{}
	for p, c := range sr.Files {
		files[p] = []byte(c)
	}
	if len(files) == 0 {
		files["README.md"] = []byte("# " + sr.Name + "\n")
	}
	sig := gitserver.Signature{Name: ownerLogin, Email: ownerLogin + "@users.noreply.example.test", When: now}
	if _, err := git.CreateRepository(context.Background(), ownerLogin, sr.Name, branch, files, sig); err != nil {
		return fmt.Errorf("failed to create repository %s/%s: %w", ownerLogin, sr.Name, err)
	}
	return nil
}

// newProtection turns a validated seed's (or the control's) protection into the
// world's. Pins are kept by App ID, as GitHub keeps them: the check runs an App
// creates carry its ID, and the protection API renders it.
func newProtection(w *state.World, p SeedProtection) *state.Protection {
	prot := &state.Protection{RequiredChecks: slices.Clone(p.RequiredChecks), RequiredReviews: p.RequiredReviews,
		EnforceAdmins: p.EnforceAdmins, BypassApps: slices.Clone(p.BypassApps), Strict: p.Strict,
		RequiredSignatures: p.RequiredSignatures}
	for check, slug := range p.RequiredCheckApps {
		if prot.CheckApps == nil {
			prot.CheckApps = map[string]int64{}
		}
		prot.CheckApps[check] = w.AppIDBySlug(slug)
	}
	return prot
}
