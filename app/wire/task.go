package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Task file names: what the runner writes into the VM's workspace for the agent.
const (
	TaskMarkdown = "TASK.md"
	TaskJSON     = "task.json"
)

// Files renders the task as the files the agent reads: TASK.md for the agent's prompt
// and task.json for tools. Title, body, plan and comments are verbatim: the approver
// approved exactly this text (the status comment showed what its rendering hides).
func (t Task) Files() (map[string][]byte, error) {
	raw, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("failed to encode the task of %s: %w", t.WorkItem, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n", t.Title, t.Body)
	if t.Plan != "" {
		fmt.Fprintf(&b, "\n## The approved plan\n\n%s\n", t.Plan)
	}
	if len(t.Comments) > 0 {
		b.WriteString("\n## Comments written before the approval by people with write access\n")
		for _, c := range t.Comments {
			fmt.Fprintf(&b, "\n### @%s at %s\n\n%s\n", c.Author, c.CreatedAt.UTC().Format(time.RFC3339), c.Body)
		}
	}
	if t.PullRequest > 0 {
		fmt.Fprintf(&b, "\n## The pull request\n\nPull request #%d, branch %s, head commit %s.\n", t.PullRequest, t.Branch, t.HeadCommit)
	}
	if len(t.Checks) > 0 {
		b.WriteString("\n## Required checks that fail on the pull request's head\n\nMake them pass. Their output, as the CI that ran them reported it:\n")
		for _, c := range t.Checks {
			fmt.Fprintf(&b, "\n### %s: %s\n", c.Name, c.Conclusion)
			if c.URL != "" {
				fmt.Fprintf(&b, "\nDetails: %s\n", c.URL)
			}
			for _, part := range []string{c.Title, c.Summary, c.Text} {
				if strings.TrimSpace(part) != "" {
					fmt.Fprintf(&b, "\n%s\n", part)
				}
			}
		}
	}
	fmt.Fprintf(&b, "\n---\nWork item %s, stage %s, revision %s, base commit %s.\n", t.WorkItem, t.Stage, t.SpecRevision, t.BaseCommit)
	return map[string][]byte{TaskMarkdown: []byte(b.String()), TaskJSON: append(raw, '\n')}, nil
}
