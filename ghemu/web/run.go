package web

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/actions"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

// ---- view models: copies of the world taken inside Store.Do, Markdown rendered ----

type runView struct {
	ID, JobID                          int64
	Number                             int
	Workflow, WorkflowPath, Ref, Event string
	HeadSHA, Actor, Status, Conclusion string
	RunnerName                         string
	Created, Updated                   time.Time
	Inputs                             []kv
	ExitCode                           *int
	Outputs                            []kv
	HasLog                             bool
}

type kv struct{ Key, Value string }

// ---- pages ----

func runViewOf(run *state.WorkflowRun) runView {
	v := runView{ID: run.ID, JobID: run.JobID, Number: run.Number, Workflow: run.WorkflowName,
		WorkflowPath: run.WorkflowPath, Ref: run.Ref, Event: run.Event, HeadSHA: run.HeadSHA, Actor: run.Actor,
		Status: run.Status, Conclusion: run.Conclusion, RunnerName: run.RunnerName, Created: run.CreatedAt,
		Updated: run.UpdatedAt, HasLog: run.Dir != ""}
	if run.ExitCode != nil {
		code := *run.ExitCode
		v.ExitCode = &code
	}
	v.Inputs = sortedKV(run.Inputs)
	v.Outputs = sortedKV(run.Outputs)
	return v
}

func sortedKV(m map[string]string) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// run is a workflow run's page (jobText empty) or its job's page with the log.
func (v *View) run(w http.ResponseWriter, r *http.Request, owner, name, idText, jobText string) error {
	id, perr := strconv.ParseInt(idText, 10, 64)
	var rv runView
	var pg page
	var dir string
	var err error
	v.store.Do(func(st *state.World) {
		rp := st.Repo(owner, name)
		var run *state.WorkflowRun
		if rp != nil && perr == nil {
			run = rp.Run(id)
		}
		if run == nil || (jobText != "" && jobText != strconv.FormatInt(run.JobID, 10)) {
			if rp == nil {
				err = notFound("Repository " + owner + "/" + name)
			} else {
				err = notFound("Workflow run " + idText)
			}
			return
		}
		rv, dir = runViewOf(run), run.Dir
		pg = page{Title: fmt.Sprintf("%s #%d · %s", run.WorkflowName, run.Number, rp.FullName()),
			Owner: rp.Owner, Repo: rp.Name, Private: rp.Private}
	})
	if err != nil {
		return err
	}
	data := map[string]any{"Run": rv, "Job": jobText != ""}
	if rv.HasLog {
		if jobText != "" {
			log, err := actions.ReadLog(dir)
			if err != nil {
				return fmt.Errorf("failed to read the log of run %d: %w", id, err)
			}
			data["Log"] = string(log)
		} else if s, err := actions.ReadSummary(dir); err == nil && s != "" {
			data["Summary"] = renderMarkdown(s)
		}
	}
	pg.Data = data
	v.writePage(w, r, http.StatusOK, "run", pg)
	return nil
}

func (v *View) commit(w http.ResponseWriter, r *http.Request, owner, name, rev string) error {
	var pg page
	found := false
	v.store.Do(func(st *state.World) {
		if rp := st.Repo(owner, name); rp != nil {
			found = true
			owner, name = rp.Owner, rp.Name
			pg = page{Owner: rp.Owner, Repo: rp.Name, Private: rp.Private}
		}
	})
	if !found {
		return notFound("Repository " + owner + "/" + name)
	}
	ci, err := v.git.Commit(r.Context(), owner, name, rev)
	if err != nil {
		if errors.Is(err, gitserver.ErrObjectNotFound) || errors.Is(err, gitserver.ErrInvalidName) {
			return notFound("Commit " + rev)
		}
		return fmt.Errorf("failed to read commit %s: %w", rev, err)
	}
	raw, err := v.git.CommitDiff(r.Context(), owner, name, ci.SHA)
	if err != nil {
		return fmt.Errorf("failed to diff commit %s: %w", rev, err)
	}
	subject, _, _ := strings.Cut(ci.Message, "\n")
	pg.Title = subject + " · " + owner + "/" + name + "@" + shortSHA(ci.SHA)
	pg.Data = map[string]any{"Commit": ci, "Diff": parseDiff(raw)}
	v.writePage(w, r, http.StatusOK, "commit", pg)
	return nil
}
