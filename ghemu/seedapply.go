package ghemu

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/gitserver"
)

// applySeed builds a fresh state from a validated seed, creating the git repositories.
func (e *Emulator) applySeed(s *Seed) error {
	now := e.timestamp()
	st := &state{
		NextID:        1000,
		Users:         map[string]*user{},
		Installations: map[int64]*installation{},
		Repos:         map[string]*repo{},
		Tokens:        map[string]*installToken{},
	}
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
			"check_run", "workflow_run", "workflow_job"}
	}
	owner := app.Owner
	if owner == "" && len(s.Organizations) > 0 {
		owner = s.Organizations[0]
	}
	st.App = appInfo{ID: app.ID, Slug: app.Slug, Name: app.Name, Owner: owner,
		ClientID: fmt.Sprintf("Iv1.%016x", app.ID), Permissions: app.Permissions,
		Events: app.Events, CreatedAt: now}
	for _, u := range s.Users {
		tok := u.Token
		if tok == "" {
			tok = randomToken("ghp_")
		}
		typ := "User"
		if u.Bot {
			typ = "Bot"
		}
		st.Users[key(u.Login)] = &user{ID: st.nextID(), Login: u.Login, Type: typ,
			Name: u.Name, Email: u.Email, Token: tok}
	}
	for _, o := range s.Organizations {
		st.Users[key(o)] = &user{ID: st.nextID(), Login: o, Type: "Organization"}
	}
	bot := app.Slug + "[bot]"
	st.Users[key(bot)] = &user{ID: st.nextID(), Login: bot, Type: "Bot"}
	e.st = st
	for _, sr := range s.Repositories {
		if err := e.seedRepo(sr, now); err != nil {
			return err
		}
	}
	for _, si := range s.Installations {
		in := &installation{ID: st.nextID(), Account: st.Users[key(si.Account)].Login,
			AllRepos: len(si.Repositories) == 0, Permissions: si.Permissions,
			Events: app.Events, CreatedAt: now}
		if in.Permissions == nil {
			in.Permissions = app.Permissions
		}
		for _, name := range si.Repositories {
			in.RepoIDs = append(in.RepoIDs, st.repoByName(si.Account, name).ID)
		}
		st.Installations[in.ID] = in
	}
	return nil
}

func (e *Emulator) seedRepo(sr SeedRepository, now time.Time) error {
	st := e.st
	branch := sr.DefaultBranch
	if branch == "" {
		branch = "main"
	}
	ownerLogin := st.Users[key(sr.Owner)].Login
	rp := &repo{
		ID: st.nextID(), Owner: ownerLogin, Name: sr.Name, Private: sr.Private,
		Description: sr.Description, DefaultBranch: branch,
		CreatedAt: now, UpdatedAt: now, PushedAt: now,
		Protected: map[string]*protection{}, Collaborators: map[string]string{},
		Labels: map[string]*label{}, Issues: map[int]*issue{}, Comments: map[int64]*comment{},
		Pulls: map[int]*pull{}, Reviews: map[int64]*review{}, CheckRuns: map[int64]*checkRun{},
		Runs: map[int64]*workflowRun{}, NextNumber: 1, NextRunNumber: 1,
	}
	for login, perm := range sr.Collaborators {
		rp.Collaborators[key(login)] = perm
	}
	for _, p := range sr.Protected {
		rp.Protected[p.Branch] = e.newProtection(p)
	}
	for _, l := range sr.Labels {
		color := strings.TrimPrefix(l.Color, "#")
		if color == "" {
			color = defaultLabelColor
		}
		rp.Labels[key(l.Name)] = &label{ID: st.nextID(), Name: l.Name, Color: color,
			Description: l.Description}
	}
	files := map[string][]byte{}
	for p, c := range sr.Files {
		files[p] = []byte(c)
	}
	if len(files) == 0 {
		files["README.md"] = []byte("# " + sr.Name + "\n")
	}
	sig := gitserver.Signature{Name: ownerLogin, Email: ownerLogin + "@users.noreply.example.test", When: now}
	if _, err := e.git.CreateRepository(context.Background(), ownerLogin, sr.Name, branch, files, sig); err != nil {
		return fmt.Errorf("failed to create repository %s/%s: %w", ownerLogin, sr.Name, err)
	}
	st.Repos[key(rp.fullName())] = rp
	return nil
}
