package state

import (
	"encoding/json"
	"time"
)

// The state file is the World as JSON. Its collections are unexported (the World's and
// the Repo's methods are the only way to them), so these mirrors carry them to and
// from the file under the names the emulator has always written. They are plain
// structs, not json.Marshaler implementations: encoding/json would scan a Marshaler's
// output once more, and the world is saved after every change.

type worldFile struct {
	NextID        int64                    `json:"next_id"`
	App           App                      `json:"app"`
	Users         map[string]*User         `json:"users"`
	Installations map[int64]*Installation  `json:"installations"`
	Repos         map[string]*repoFile     `json:"repos"`
	Tokens        map[string]*Token        `json:"tokens"`
	Deliveries    []*Delivery              `json:"deliveries"`
	ManifestCodes map[string]*ManifestCode `json:"manifest_codes,omitempty"`
	Announced     bool                     `json:"announced"`
}

// encode is the world as the state file holds it.
func (w *World) encode() ([]byte, error) {
	repos := make(map[string]*repoFile, len(w.repos))
	for k, r := range w.repos {
		repos[k] = r.file()
	}
	return json.Marshal(worldFile{NextID: w.nextID, App: w.app, Users: w.users, Installations: w.installations,
		Repos: repos, Tokens: w.tokens, Deliveries: w.deliveries, ManifestCodes: w.manifestCodes,
		Announced: w.announced})
}

// decode reads a state file into the world.
func (w *World) decode(raw []byte) error {
	var f worldFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return err
	}
	*w = World{nextID: f.NextID, app: f.App, users: f.Users, installations: f.Installations,
		repos: make(map[string]*Repo, len(f.Repos)), tokens: f.Tokens, deliveries: f.Deliveries,
		manifestCodes: f.ManifestCodes, announced: f.Announced}
	initMap(&w.users)
	initMap(&w.installations)
	initMap(&w.tokens)
	initMap(&w.manifestCodes)
	for k, rf := range f.Repos {
		r := rf.repo()
		r.init(w)
		w.repos[k] = r
	}
	return nil
}

type repoFile struct {
	ID             int64                    `json:"id"`
	Owner          string                   `json:"owner"`
	Name           string                   `json:"name"`
	Private        bool                     `json:"private"`
	Description    string                   `json:"description"`
	DefaultBranch  string                   `json:"default_branch"`
	CreatedAt      time.Time                `json:"created_at"`
	UpdatedAt      time.Time                `json:"updated_at"`
	PushedAt       time.Time                `json:"pushed_at"`
	Protected      map[string]*Protection   `json:"protected"`
	Collaborators  map[string]string        `json:"collaborators"`
	Labels         map[string]*Label        `json:"labels"`
	NextNumber     int                      `json:"next_number"`
	Issues         map[int]*Issue           `json:"issues"`
	Comments       map[int64]*Comment       `json:"comments"`
	Pulls          map[int]*Pull            `json:"pulls"`
	Reviews        map[int64]*Review        `json:"reviews"`
	ReviewComments map[int64]*ReviewComment `json:"review_comments,omitempty"`
	CheckRuns      map[int64]*CheckRun      `json:"check_runs"`
	Statuses       map[int64]*CommitStatus  `json:"statuses,omitempty"`
	Runs           map[int64]*WorkflowRun   `json:"runs"`
	NextRunNumber  int                      `json:"next_run_number"`
	Workflows      map[string]int64         `json:"workflows"`
	Verifications  map[string]*Verification `json:"verifications,omitempty"`
}

func (r *Repo) file() *repoFile {
	return &repoFile{ID: r.ID, Owner: r.Owner, Name: r.Name, Private: r.Private,
		Description: r.Description, DefaultBranch: r.DefaultBranch, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt, PushedAt: r.PushedAt, Protected: r.protected, Collaborators: r.collaborators,
		Labels: r.labels, NextNumber: r.nextNumber, Issues: r.issues, Comments: r.comments, Pulls: r.pulls,
		Reviews: r.reviews, ReviewComments: r.reviewComments, CheckRuns: r.checkRuns, Statuses: r.statuses,
		Runs: r.runs, NextRunNumber: r.nextRunNumber, Workflows: r.workflows, Verifications: r.verifications}
}

func (f *repoFile) repo() *Repo {
	return &Repo{ID: f.ID, Owner: f.Owner, Name: f.Name, Private: f.Private, Description: f.Description,
		DefaultBranch: f.DefaultBranch, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt, PushedAt: f.PushedAt,
		protected: f.Protected, collaborators: f.Collaborators, labels: f.Labels, nextNumber: f.NextNumber,
		issues: f.Issues, comments: f.Comments, pulls: f.Pulls, reviews: f.Reviews,
		reviewComments: f.ReviewComments, checkRuns: f.CheckRuns, statuses: f.Statuses, runs: f.Runs,
		nextRunNumber: f.NextRunNumber, workflows: f.Workflows, verifications: f.Verifications}
}
