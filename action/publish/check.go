package publish

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/workspace"
)

// EvidenceCheckName is the check run that carries a run's evidence.
const EvidenceCheckName = "bumper/evidence"

// CheckRunOptions says which check run to write.
type CheckRunOptions struct {
	// Repository is owner/name; Head the commit the run pushed (40 hex digits).
	Repository, Head string
	// Evidence gives the conclusion (its outcome) and the summary (evidencemd.Render).
	Evidence *evidence.Evidence
	// DetailsURL points at the Actions run. Empty: ServerURL/<repository>/actions/runs/
	// <Evidence.Trigger.RunID> when both are known (GITHUB_SERVER_URL), else none.
	DetailsURL string
	ServerURL  string
	// AppID, when known, restricts the check runs that may be updated to the App's
	// (GitHub refuses to update another App's anyway).
	AppID int64
}

// CheckRun is the evidence check run as written.
type CheckRun struct {
	ID         int64
	URL        string
	Conclusion string
	// Created: this call created it; false when it updated the run's earlier one.
	Created bool
	// Cuts say what the summary left out to stay within GitHub's 65,535 characters.
	Cuts []string
}

// Conclusion is the check run conclusion of a run's outcome.
func Conclusion(o evidence.Outcome) string {
	switch o {
	case evidence.OutcomeSuccess:
		return "success"
	case evidence.OutcomeStopped:
		return "cancelled"
	case evidence.OutcomeTimedOut:
		return "timed_out"
	default: // failure, over_budget, error and anything unknown
		return "failure"
	}
}

// EvidenceCheckRun creates the bumper/evidence check run on the head commit, completed
// with the conclusion of the run's outcome and the evidence as its summary, or updates
// the one this attempt made before (same name and external id on the same commit).
func EvidenceCheckRun(ctx context.Context, gh *github.Client, o CheckRunOptions) (*CheckRun, error) {
	var errs []error
	owner, name, err := splitRepo(o.Repository)
	if err != nil {
		errs = append(errs, err)
	}
	if gh == nil {
		errs = append(errs, errors.New("no GitHub client"))
	}
	if !workspace.IsCommitID(o.Head) {
		errs = append(errs, fmt.Errorf("head %q is not a full commit id", o.Head))
	}
	if o.Evidence == nil {
		errs = append(errs, errors.New("no evidence"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	e := o.Evidence
	summary, of := evidencemd.Render(e, evidencemd.CheckRunSummaryLimit)
	cr := &CheckRun{Conclusion: Conclusion(e.Outcome)}
	for _, c := range of.Cuts {
		cr.Cuts = append(cr.Cuts, c.Section+": "+c.Detail)
	}
	output := &github.CheckRunOutput{Title: github.String(checkTitle(e)), Summary: github.String(summary)}
	externalID := fmt.Sprintf("%s#%d/attempt-%d", e.WorkItem.Repository, e.WorkItem.Issue, e.Attempt)
	details := o.DetailsURL
	if details == "" && o.ServerURL != "" && e.Trigger.RunID > 0 {
		details = strings.TrimRight(o.ServerURL, "/") + "/" + o.Repository + "/actions/runs/" + strconv.FormatInt(e.Trigger.RunID, 10)
	}
	var detailsPtr *string
	if details != "" {
		detailsPtr = github.String(details)
	}
	now := github.Timestamp{Time: time.Now().UTC()}

	existing, err := findCheckRun(ctx, gh, owner, name, o.Head, externalID, o.AppID)
	if err != nil {
		return nil, err
	}
	var got *github.CheckRun
	if existing != nil {
		got, _, err = gh.Checks.UpdateCheckRun(ctx, owner, name, existing.GetID(), github.UpdateCheckRunOptions{
			Name: EvidenceCheckName, DetailsURL: detailsPtr, ExternalID: github.String(externalID),
			Status: github.String("completed"), Conclusion: github.String(cr.Conclusion), CompletedAt: &now, Output: output,
		})
		if err != nil {
			return nil, fmt.Errorf("failed to update the %s check run %d on %s: %w", EvidenceCheckName, existing.GetID(), o.Head, err)
		}
	} else {
		started := now
		if !e.StartedAt.IsZero() {
			started = github.Timestamp{Time: e.StartedAt.UTC()}
		}
		got, err = CreateCheckRunOnce(ctx, gh, owner, name, github.CreateCheckRunOptions{
			Name: EvidenceCheckName, HeadSHA: o.Head, DetailsURL: detailsPtr, ExternalID: github.String(externalID),
			Status: github.String("completed"), Conclusion: github.String(cr.Conclusion), StartedAt: &started, CompletedAt: &now,
			Output: output,
		}, o.AppID)
		if err != nil {
			return nil, fmt.Errorf("failed to create the %s check run on %s: %w", EvidenceCheckName, o.Head, err)
		}
		cr.Created = true
	}
	cr.ID, cr.URL = got.GetID(), got.GetHTMLURL()
	return cr, nil
}

// CreateCheckRunOnce creates a check run named by opts' name and external ID (which it
// must carry), once: GitHub's 5xx may or may not have created it, so after one the check
// runs of that name on the head are read, and the one with that external ID (of appID,
// when not 0) is taken as made; only when there is none is the create tried again.
func CreateCheckRunOnce(ctx context.Context, gh *github.Client, owner, name string, opts github.CreateCheckRunOptions, appID int64) (*github.CheckRun, error) {
	if opts.ExternalID == nil || *opts.ExternalID == "" {
		return nil, fmt.Errorf("failed to create the %s check run: it needs an external ID to be found again", opts.Name)
	}
	for try := 1; ; try++ {
		got, _, err := gh.Checks.CreateCheckRun(ctx, owner, name, opts)
		var er *github.ErrorResponse
		if err == nil || try == checkRunAttempts || !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode < http.StatusInternalServerError {
			return got, err
		}
		found, ferr := findCheckRunNamed(ctx, gh, owner, name, opts.Name, opts.HeadSHA, *opts.ExternalID, appID)
		if ferr != nil {
			return nil, fmt.Errorf("%w (and reading back whether it was made: %w)", err, ferr)
		}
		if found != nil {
			return found, nil
		}
	}
}

// checkRunAttempts bounds CreateCheckRunOnce's creates after GitHub's 5xx.
const checkRunAttempts = 3

// findCheckRun returns this attempt's earlier evidence check run on head, or nil.
func findCheckRun(ctx context.Context, gh *github.Client, owner, name, head, externalID string, appID int64) (*github.CheckRun, error) {
	return findCheckRunNamed(ctx, gh, owner, name, EvidenceCheckName, head, externalID, appID)
}

// findCheckRunNamed returns the check run called check with externalID on head (of
// appID, when not 0), or nil.
func findCheckRunNamed(ctx context.Context, gh *github.Client, owner, name, check, head, externalID string, appID int64) (*github.CheckRun, error) {
	opts := &github.ListCheckRunsOptions{CheckName: github.String(check), Filter: github.String("all"), ListOptions: github.ListOptions{PerPage: 100}}
	if appID != 0 {
		opts.AppID = github.Int64(appID)
	}
	for {
		res, resp, err := gh.Checks.ListCheckRunsForRef(ctx, owner, name, head, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to list the %s check runs on %s: %w", check, head, err)
		}
		for _, r := range res.CheckRuns {
			if r.GetName() == check && r.GetExternalID() == externalID && r.GetHeadSHA() == head && (appID == 0 || r.GetApp().GetID() == appID) {
				return r, nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}

// checkTitle is the check run's title: the outcome and its reason, on one line.
func checkTitle(e *evidence.Evidence) string {
	t := "Run " + strings.ReplaceAll(string(e.Outcome), "_", " ")
	if e.Outcome == "" {
		t = "Run ended"
	}
	if r := strings.Join(strings.Fields(e.OutcomeReason), " "); r != "" && e.Outcome != evidence.OutcomeSuccess {
		t += ": " + r
	}
	return pullTitle(t, 0)
}
