package ghemu

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/gitserver"
)

// ---- view models: copies of the state taken under e.mu, with Markdown rendered ----

type webRunView struct {
	ID, JobID                          int64
	Number                             int
	Workflow, WorkflowPath, Ref, Event string
	HeadSHA, Actor, Status, Conclusion string
	RunnerName                         string
	Created, Updated                   time.Time
	Inputs                             []webKV
	ExitCode                           *int
	Outputs                            []webKV
	HasLog                             bool
}

type webKV struct{ Key, Value string }

// ---- pages ----

func webRunOf(run *workflowRun) webRunView {
	v := webRunView{ID: run.ID, JobID: run.JobID, Number: run.Number, Workflow: run.WorkflowName,
		WorkflowPath: run.WorkflowPath, Ref: run.Ref, Event: run.Event, HeadSHA: run.HeadSHA, Actor: run.Actor,
		Status: run.Status, Conclusion: run.Conclusion, RunnerName: run.RunnerName, Created: run.CreatedAt,
		Updated: run.UpdatedAt, ExitCode: run.ExitCode, HasLog: run.Dir != ""}
	v.Inputs = sortedKV(run.Inputs)
	v.Outputs = sortedKV(run.Outputs)
	return v
}

func sortedKV(m map[string]string) []webKV {
	out := make([]webKV, 0, len(m))
	for k, v := range m {
		out = append(out, webKV{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// webRun is a workflow run's page (jobText empty) or its job's page with the log.
func (e *Emulator) webRun(w http.ResponseWriter, owner, name, idText, jobText string) error {
	id, err := strconv.ParseInt(idText, 10, 64)
	e.mu.Lock()
	rp := e.st.repoByName(owner, name)
	var run *workflowRun
	if rp != nil && err == nil {
		run = rp.Runs[id]
	}
	if run == nil || (jobText != "" && jobText != strconv.FormatInt(run.JobID, 10)) {
		e.mu.Unlock()
		if rp == nil {
			return webNotFound("Repository " + owner + "/" + name)
		}
		return webNotFound("Workflow run " + idText)
	}
	v := webRunOf(run)
	page := webPage{Title: fmt.Sprintf("%s #%d · %s", run.WorkflowName, run.Number, rp.fullName()),
		Owner: rp.Owner, Repo: rp.Name, Private: rp.Private}
	owner, name = rp.Owner, rp.Name
	e.mu.Unlock()

	data := map[string]any{"Run": v, "Job": jobText != ""}
	if v.HasLog {
		if jobText != "" {
			log, err := e.RunLog(owner, name, id)
			if err != nil {
				return fmt.Errorf("failed to read the log of run %d: %w", id, err)
			}
			data["Log"] = string(log)
		} else if s, err := e.RunSummary(owner, name, id); err == nil && s != "" {
			data["Summary"] = renderMarkdown(s)
		}
	}
	page.Data = data
	e.writePage(w, http.StatusOK, "run", page)
	return nil
}

func (e *Emulator) webCommit(w http.ResponseWriter, r *http.Request, owner, name, rev string) error {
	e.mu.Lock()
	rp := e.st.repoByName(owner, name)
	var page webPage
	if rp != nil {
		owner, name = rp.Owner, rp.Name
		page = webPage{Owner: rp.Owner, Repo: rp.Name, Private: rp.Private}
	}
	e.mu.Unlock()
	if rp == nil {
		return webNotFound("Repository " + owner + "/" + name)
	}
	ci, err := e.git.Commit(r.Context(), owner, name, rev)
	if err != nil {
		if errors.Is(err, gitserver.ErrObjectNotFound) || errors.Is(err, gitserver.ErrInvalidName) {
			return webNotFound("Commit " + rev)
		}
		return fmt.Errorf("failed to read commit %s: %w", rev, err)
	}
	raw, err := e.git.CommitDiff(r.Context(), owner, name, ci.SHA)
	if err != nil {
		return fmt.Errorf("failed to diff commit %s: %w", rev, err)
	}
	subject, _, _ := strings.Cut(ci.Message, "\n")
	page.Title = subject + " · " + owner + "/" + name + "@" + shortSHA(ci.SHA)
	page.Data = map[string]any{"Commit": ci, "Diff": parseDiff(raw)}
	e.writePage(w, http.StatusOK, "commit", page)
	return nil
}
