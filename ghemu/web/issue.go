package web

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

// ---- view models: copies of the world taken inside Store.Do, Markdown rendered ----

type label struct {
	Name, Description string
	// Color and Text are CSS colours: the label's, and black or white, whichever
	// reads better on it.
	Color, Text string
}

type comment struct {
	ID      int64
	User    string
	Bot     bool
	Created time.Time
	Edited  bool
	Body    template.HTML
}

type issueView struct {
	Number      int
	Title       string
	State       string
	StateReason string
	IsPull      bool
	User        string
	Bot         bool
	Created     time.Time
	Labels      []label
	Assignees   []string
	Body        template.HTML
	Comments    []comment
	// Tone is the state badge's colour class.
	Tone      string
	StateText string
}

// ---- pages ----

// issueTone is the state badge of an issue or pull request: its colour and its word.
func issueTone(is *state.Issue, p *state.Pull) (string, string) {
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

// labelsOf are the repository's labels with the keys given, in that order.
func labelsOf(rp *state.Repo, keys []string) []label {
	out := make([]label, 0, len(keys))
	for _, k := range keys {
		l := rp.Label(k)
		if l == nil {
			continue
		}
		bg, fg := labelColors(l.Color)
		out = append(out, label{Name: l.Name, Description: l.Description, Color: bg, Text: fg})
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

func issueViewOf(st *state.World, rp *state.Repo, is *state.Issue) issueView {
	v := issueView{Number: is.Number, Title: is.Title, State: is.State, StateReason: is.StateReason,
		IsPull: is.IsPull, User: is.User, Bot: isBot(st, is.User), Created: is.CreatedAt,
		Labels: labelsOf(rp, is.Labels), Assignees: slices.Clone(is.Assignees),
		Body: renderMarkdown(is.Body)}
	v.Tone, v.StateText = issueTone(is, rp.Pull(is.Number))
	for _, c := range rp.Comments(is.Number) {
		v.Comments = append(v.Comments, comment{ID: c.ID, User: c.User, Bot: isBot(st, c.User) || c.ViaApp,
			Created: c.CreatedAt, Edited: c.UpdatedAt.After(c.CreatedAt), Body: renderMarkdown(c.Body)})
	}
	return v
}

func (v *View) issue(w http.ResponseWriter, r *http.Request, owner, name, num string) error {
	n, err := number(num, "Issue")
	if err != nil {
		return err
	}
	var pg page
	var redirect string
	v.store.Do(func(st *state.World) {
		rp := st.Repo(owner, name)
		if rp == nil {
			err = notFound("Repository " + owner + "/" + name)
			return
		}
		is := rp.Issue(n)
		if is == nil {
			err = notFound("Issue #" + num)
			return
		}
		if is.IsPull {
			// GitHub sends an issue URL of a pull request to the pull request.
			redirect = "/" + rp.FullName() + "/pull/" + num
			return
		}
		pg = page{Title: fmt.Sprintf("%s · Issue #%d · %s", is.Title, n, rp.FullName()),
			Owner: rp.Owner, Repo: rp.Name, Private: rp.Private, Data: issueViewOf(st, rp, is)}
	})
	if err != nil {
		return err
	}
	if redirect != "" {
		http.Redirect(w, r, redirect, http.StatusFound)
		return nil
	}
	v.writePage(w, r, http.StatusOK, "issue", pg)
	return nil
}
