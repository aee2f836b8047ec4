package report

import (
	"context"
	"fmt"
	"slices"
)

// Title is the report issue's title when Post opens it.
const Title = "Bumper report"

// Post keeps the one issue labeled Label in repo up to date with body: it opens it once,
// then edits its body, and writes nothing when the body is already there. Of several
// issues with the label, the lowest-numbered one is kept. It returns the issue's number
// and whether it wrote.
func Post(ctx context.Context, gh GitHub, repo, body string) (int, bool, error) {
	issues, err := gh.IssuesWithLabel(ctx, repo, Label)
	if err != nil {
		return 0, false, fmt.Errorf("failed to find the %s issue of %s: %w", Label, repo, err)
	}
	if len(issues) == 0 {
		n, err := gh.CreateIssue(ctx, repo, Title, body, []string{Label})
		if err != nil {
			return 0, false, fmt.Errorf("failed to open the %s issue of %s: %w", Label, repo, err)
		}
		return n, true, nil
	}
	is := slices.MinFunc(issues, func(a, b Issue) int { return a.Number - b.Number })
	if is.Body == body {
		return is.Number, false, nil
	}
	if err := gh.EditIssueBody(ctx, repo, is.Number, body); err != nil {
		return 0, false, fmt.Errorf("failed to update the %s issue #%d of %s: %w", Label, is.Number, repo, err)
	}
	return is.Number, true, nil
}

// ForRepository is the report of one repository of r: its column alone, what Post
// writes in that repository (a reader of one repository learns nothing of another's).
func ForRepository(r Report, repo string) Report {
	out := Report{Since: r.Since, Verified: r.Verified}
	for _, s := range r.Repositories {
		if s.Repository == repo {
			out.Repositories, out.Total = []Summary{s}, s
		}
	}
	prefix := repo + "#"
	for _, p := range r.Problems {
		if len(p) > len(prefix) && p[:len(prefix)] == prefix {
			out.Problems = append(out.Problems, p)
		}
	}
	return out
}
