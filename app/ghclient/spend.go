package ghclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/workitem"
)

// SpendRefPrefix is where the day counters live: refs/bumper/spend/<day> in the
// repository (a repository's counter) or in the installation's ledger repository (the
// installation's). Each points at a commit whose message is the day's DayCounter in
// JSON; each write is a new commit on top of the one it read, moved by a
// fast-forward-only ref update, so GitHub refuses a write made on a counter someone
// else moved: a compare-and-swap with no database but GitHub.
const SpendRefPrefix = "refs/bumper/spend/"

// DefaultLedgerRepository is the repository of an installation's account that holds the
// installation's counters unless serve's config names another.
const DefaultLedgerRepository = ".github"

// maxCounterBytes bounds a counter's JSON: a day's runs and items by name.
const maxCounterBytes = 60 << 10

// SpendStore keeps the day counters in GitHub through the App's installations.
type SpendStore struct {
	conn *Connector
	// ledgerRepo is the name, in each installation's account, of the repository that
	// holds the installation's counters.
	ledgerRepo string
}

var _ workitem.SpendStore = (*SpendStore)(nil)

// NewSpendStore returns a store on conn; ledgerRepo ("" for DefaultLedgerRepository)
// names the repository, in each account, of its installation-wide counters.
func NewSpendStore(conn *Connector, ledgerRepo string) *SpendStore {
	if ledgerRepo == "" {
		ledgerRepo = DefaultLedgerRepository
	}
	return &SpendStore{conn: conn, ledgerRepo: ledgerRepo}
}

// where is the repository and the client holding scope's counters: the repository
// itself ("owner/name"), or the account's ledger repository ("owner").
func (s *SpendStore) where(ctx context.Context, scope string) (*gogithub.Client, string, string, error) {
	repo := scope
	if !strings.Contains(scope, "/") {
		repo = scope + "/" + s.ledgerRepo
	}
	gh, err := s.conn.ForRepository(ctx, repo)
	if err != nil {
		return nil, "", "", fmt.Errorf("failed to reach %s, where the day counters of %s live (install the App on it): %w", repo, scope, err)
	}
	owner, name, err := split(repo)
	if err != nil {
		return nil, "", "", err
	}
	return gh.(*Client).gh, owner, name, nil
}

// Load implements workitem.SpendStore: the counter and the commit it is at, "" when
// the day has none yet.
func (s *SpendStore) Load(ctx context.Context, scope, day string) (workitem.DayCounter, string, error) {
	var c workitem.DayCounter
	gh, owner, name, err := s.where(ctx, scope)
	if err != nil {
		return c, "", err
	}
	ref, resp, err := gh.Git.GetRef(ctx, owner, name, strings.TrimPrefix(SpendRefPrefix, "refs/")+day)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return c, "", nil
	}
	if err != nil {
		return c, "", err
	}
	sha := ref.GetObject().GetSHA()
	commit, _, err := gh.Git.GetCommit(ctx, owner, name, sha)
	if err != nil {
		return c, "", err
	}
	msg := commit.GetMessage()
	if len(msg) > maxCounterBytes {
		return c, "", fmt.Errorf("the counter at %s is %d bytes, more than %d", sha, len(msg), maxCounterBytes)
	}
	if err := json.Unmarshal([]byte(msg), &c); err != nil {
		return c, "", fmt.Errorf("failed to read the counter at %s: %w", sha, err)
	}
	if c.Day != day {
		return c, "", fmt.Errorf("the counter at %s is for %q, not %s", sha, c.Day, day)
	}
	return c, sha, nil
}

// Save implements workitem.SpendStore.
func (s *SpendStore) Save(ctx context.Context, scope, day string, c workitem.DayCounter, version string) (bool, error) {
	gh, owner, name, err := s.where(ctx, scope)
	if err != nil {
		return false, err
	}
	msg, err := json.Marshal(c)
	if err != nil {
		return false, err
	}
	if len(msg) > maxCounterBytes {
		return false, fmt.Errorf("the day's counter would be %d bytes, more than %d", len(msg), maxCounterBytes)
	}
	// A commit needs a tree: the one the previous counter used, or the default
	// branch's. Its files mean nothing; the message is the record.
	tree, err := s.tree(ctx, gh, owner, name, version)
	if err != nil {
		return false, err
	}
	var parents []*gogithub.Commit
	if version != "" {
		parents = []*gogithub.Commit{{SHA: &version}}
	}
	commit, _, err := gh.Git.CreateCommit(ctx, owner, name, &gogithub.Commit{Message: gogithub.String(string(msg)),
		Tree: &gogithub.Tree{SHA: &tree}, Parents: parents}, nil)
	if err != nil {
		return false, fmt.Errorf("failed to write the counter's commit: %w", err)
	}
	ref := SpendRefPrefix + day
	if version == "" {
		_, _, err = gh.Git.CreateRef(ctx, owner, name, &gogithub.Reference{Ref: &ref, Object: &gogithub.GitObject{SHA: commit.SHA}})
		if refExists(err) {
			return false, nil
		}
		return err == nil, err
	}
	_, _, err = gh.Git.UpdateRef(ctx, owner, name, &gogithub.Reference{Ref: &ref, Object: &gogithub.GitObject{SHA: commit.SHA}}, false)
	var gerr *gogithub.ErrorResponse
	if errors.As(err, &gerr) && gerr.Response != nil && gerr.Response.StatusCode == http.StatusUnprocessableEntity {
		return false, nil // not a fast-forward: someone moved the counter since it was read
	}
	return err == nil, err
}

func (s *SpendStore) tree(ctx context.Context, gh *gogithub.Client, owner, name, version string) (string, error) {
	if version != "" {
		c, _, err := gh.Git.GetCommit(ctx, owner, name, version)
		if err != nil {
			return "", err
		}
		return c.GetTree().GetSHA(), nil
	}
	repo, _, err := gh.Repositories.Get(ctx, owner, name)
	if err != nil {
		return "", err
	}
	br, _, err := gh.Repositories.GetBranch(ctx, owner, name, repo.GetDefaultBranch(), 1)
	if err != nil {
		return "", fmt.Errorf("failed to read %s/%s's default branch for the counter's tree: %w", owner, name, err)
	}
	return br.GetCommit().GetCommit().GetTree().GetSHA(), nil
}
