package ghemu

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ---- view models: copies of the state taken under e.mu, with Markdown rendered ----

type webLabel struct {
	Name, Description string
	// Color and Text are CSS colours: the label's, and black or white, whichever
	// reads better on it.
	Color, Text string
}

type webComment struct {
	ID      int64
	User    string
	Bot     bool
	Created time.Time
	Edited  bool
	Body    template.HTML
}

type webIssueView struct {
	Number      int
	Title       string
	State       string
	StateReason string
	IsPull      bool
	User        string
	Bot         bool
	Created     time.Time
	Labels      []webLabel
	Assignees   []string
	Body        template.HTML
	Comments    []webComment
	// Tone is the state badge's colour class.
	Tone      string
	StateText string
}

// ---- pages ----

// issueTone is the state badge of an issue or pull request: its colour and its word.
func issueTone(is *issue, p *pull) (string, string) {
	switch {
	case p != nil && p.Merged:
		return "merged", "Merged"
	case is.State == "open" && p != nil && p.Draft:
		return "neutral", "Draft"
	case is.State == "open":
		return "open", "Open"
	case !is.IsPull && is.StateReason == "not_planned":
		return "neutral", "Closed as not planned"
	}
	return "closed", "Closed"
}

func webLabelsLocked(rp *repo, keys []string) []webLabel {
	out := make([]webLabel, 0, len(keys))
	for _, k := range keys {
		l := rp.Labels[k]
		if l == nil {
			continue
		}
		bg, fg := labelColors(l.Color)
		out = append(out, webLabel{Name: l.Name, Description: l.Description, Color: bg, Text: fg})
	}
	return out
}

// labelColors gives a label's background ("#rrggbb"; grey when the stored colour is
// not six hex digits) and the text colour that contrasts with it: black on light
// colours, white on dark ones, chosen by WCAG relative luminance.
func labelColors(hex string) (string, string) {
	v, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || len(hex) != 6 {
		return "#ededed", "#1f2328"
	}
	lin := func(c uint64) float64 {
		s := float64(c) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	l := 0.2126*lin(v>>16&0xff) + 0.7152*lin(v>>8&0xff) + 0.0722*lin(v&0xff)
	// Black text contrasts better when (L+0.05)/0.05 > 1.05/(L+0.05), i.e. L > ~0.179.
	if l > 0.179 {
		return "#" + strings.ToLower(hex), "#1f2328"
	}
	return "#" + strings.ToLower(hex), "#ffffff"
}

func (e *Emulator) issueViewLocked(rp *repo, is *issue) webIssueView {
	v := webIssueView{Number: is.Number, Title: is.Title, State: is.State, StateReason: is.StateReason,
		IsPull: is.IsPull, User: is.User, Bot: e.isBotLocked(is.User), Created: is.CreatedAt,
		Labels: webLabelsLocked(rp, is.Labels), Assignees: slices.Clone(is.Assignees),
		Body: renderMarkdown(is.Body)}
	v.Tone, v.StateText = issueTone(is, rp.Pulls[is.Number])
	var comments []*comment
	for _, c := range rp.Comments {
		if c.IssueNumber == is.Number {
			comments = append(comments, c)
		}
	}
	sort.Slice(comments, func(i, j int) bool { return comments[i].ID < comments[j].ID })
	for _, c := range comments {
		v.Comments = append(v.Comments, webComment{ID: c.ID, User: c.User, Bot: e.isBotLocked(c.User) || c.ViaApp,
			Created: c.CreatedAt, Edited: c.UpdatedAt.After(c.CreatedAt), Body: renderMarkdown(c.Body)})
	}
	return v
}

func (e *Emulator) webIssue(w http.ResponseWriter, r *http.Request, owner, name, num string) error {
	n, err := webNumber(num, "Issue")
	if err != nil {
		return err
	}
	e.mu.Lock()
	rp := e.st.repoByName(owner, name)
	if rp == nil {
		e.mu.Unlock()
		return webNotFound("Repository " + owner + "/" + name)
	}
	is := rp.Issues[n]
	if is == nil {
		e.mu.Unlock()
		return webNotFound("Issue #" + num)
	}
	if is.IsPull {
		e.mu.Unlock()
		// GitHub sends an issue URL of a pull request to the pull request.
		http.Redirect(w, r, "/"+rp.fullName()+"/pull/"+num, http.StatusFound)
		return nil
	}
	v := e.issueViewLocked(rp, is)
	page := webPage{Title: fmt.Sprintf("%s · Issue #%d · %s", is.Title, n, rp.fullName()),
		Owner: rp.Owner, Repo: rp.Name, Private: rp.Private, Data: v}
	// Written after the lock is let go, as every other page is: a slow browser must not
	// hold up the API.
	e.mu.Unlock()
	e.writePage(w, http.StatusOK, "issue", page)
	return nil
}
