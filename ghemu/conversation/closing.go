package conversation

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/bumperdev/bumper/ghemu/state"
)

// closingRE finds GitHub's closing keywords: close, closes, closed, fix, fixes, fixed,
// resolve, resolves, resolved, in any case, optionally followed by a colon, then
// whitespace and "#N" or "owner/repo#N", the '#' touching the number.
var closingRE = regexp.MustCompile(`(?i)(?:^|[^\w])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+(?:([\w.-]+/[\w.-]+))?#(\d+)\b`)

// maxClosingCommits is how many of a merge's commits are read for closing keywords:
// GitHub lists at most 250 commits of a pull request.
const maxClosingCommits = 250

// markdown parses bodies as GitHub does (CommonMark with GitHub's extensions), as the
// web view renders them.
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// closingReferences returns the numbers of this repository's issues that text closes,
// in order and without repeats. References to other repositories are left out: the
// emulator closes only what it holds in the same repository.
func closingReferences(rp *state.Repo, text string) []int {
	var out []int
	seen := map[int]bool{}
	for _, m := range closingRE.FindAllStringSubmatch(text, -1) {
		if m[1] != "" && !strings.EqualFold(m[1], rp.FullName()) {
			continue
		}
		n, err := strconv.Atoi(m[2])
		if err != nil || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

// proseOf is the text of a Markdown body that GitHub reads for closing keywords: what
// it renders as text, without code spans, code blocks (fenced or indented) and raw
// HTML. A code span leaves an object replacement character in its place, so the words
// on either side of it do not join up; blocks are separated by line breaks.
func proseOf(body string) string {
	src := []byte(body)
	var b strings.Builder
	_ = ast.Walk(markdown.Parser().Parse(text.NewReader(src)), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		switch n := n.(type) {
		case *ast.CodeSpan, *ast.RawHTML:
			if entering {
				b.WriteString("\uFFFC")
			}
			return ast.WalkSkipChildren, nil
		case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock:
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			if entering {
				b.Write(n.Segment.Value(src))
				if n.SoftLineBreak() || n.HardLineBreak() {
					b.WriteByte('\n')
				}
			}
		case *ast.String:
			if entering {
				b.Write(n.Value)
			}
		default:
			if !entering && n.Type() == ast.TypeBlock {
				b.WriteByte('\n')
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// closeReferencedIssues closes the open issues a pull request merged into the default
// branch names with a closing keyword, as GitHub does: in its body outside code, and in
// the message of every commit the merge brought into the branch (the pull request's
// commits and the merge commit, mergeSHA). State reason completed, closed by the merger,
// an issues "closed" webhook each. Pull requests named that way are left alone (GitHub
// links only issues).
func (s *Service) closeReferencedIssues(ctx context.Context, w *state.World, rp *state.Repo, pr *state.Issue, p *state.Pull, merger, mergeSHA string) error {
	if p.Base != rp.DefaultBranch {
		return nil
	}
	texts := []string{proseOf(pr.Body)}
	mc, err := s.git.Commit(ctx, rp.Owner, rp.Name, mergeSHA)
	if err != nil {
		return err
	}
	if len(mc.Parents) > 0 {
		msgs, err := s.git.Messages(ctx, rp.Owner, rp.Name, mc.Parents[0], mergeSHA, maxClosingCommits)
		if err != nil {
			return err
		}
		texts = append(texts, msgs...)
	}
	rn := s.renderer(w)
	for _, t := range texts {
		for _, n := range closingReferences(rp, t) {
			is := rp.Issue(n)
			if is == nil || is.IsPull || is.State != "open" {
				continue
			}
			now := w.Timestamp()
			is.State, is.StateReason, is.ClosedAt, is.ClosedBy, is.UpdatedAt = "closed", "completed", &now, merger, now
			w.MarkChanged()
			s.emit(w, "issues", "closed", rp, merger, obj{"issue": rn.Issue(rp, is)})
		}
	}
	return nil
}
