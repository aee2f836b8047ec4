package rest

import (
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

func (a *API) listIssueLabels(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	lo, hi, err := page(w, r, c.st.BaseURL(), len(is.Labels))
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Labels(c.repo, is.Labels[lo:hi]))
}

// labelNames accepts both request shapes GitHub documents: {"labels": ["a"]} and a
// bare array ["a"].
func labelNames(r *http.Request) ([]string, error) {
	var raw any
	if err := apierr.Decode(r, &raw); err != nil {
		return nil, err
	}
	var list []any
	switch v := raw.(type) {
	case []any:
		list = v
	case map[string]any:
		l, ok := v["labels"].([]any)
		if !ok {
			return nil, apierr.Validation("Label", "labels", "missing_field", "labels must be an array of names")
		}
		list = l
	default:
		return nil, apierr.Validation("Label", "labels", "invalid", "labels must be an array of names")
	}
	names := make([]string, 0, len(list))
	for _, item := range list {
		switch v := item.(type) {
		case string:
			if strings.TrimSpace(v) == "" {
				return nil, apierr.Validation("Label", "name", "missing_field", "label names cannot be blank")
			}
			names = append(names, v)
		case map[string]any:
			n, ok := v["name"].(string)
			if !ok || strings.TrimSpace(n) == "" {
				return nil, apierr.Validation("Label", "name", "missing_field", "label name is required")
			}
			names = append(names, n)
		default:
			return nil, apierr.Validation("Label", "labels", "invalid", "labels must be names")
		}
	}
	return names, nil
}

func (a *API) addIssueLabels(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	names, err := labelNames(r)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var added []*state.Label
	for _, n := range names {
		l := ensureLabel(c.st, c.repo, n)
		if !is.HasLabel(state.Key(l.Name)) {
			is.Labels = append(is.Labels, state.Key(l.Name))
			added = append(added, l)
		}
	}
	c.labelsChanged(is, added, "labeled")
	apierr.WriteJSON(w, http.StatusOK, c.rn.Labels(c.repo, is.Labels))
}

func (a *API) setIssueLabels(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	names, err := labelNames(r)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	c.replaceLabels(is, labelKeys(c.st, c.repo, names))
	apierr.WriteJSON(w, http.StatusOK, c.rn.Labels(c.repo, is.Labels))
}

// labelKeys turns label names into the repository's label keys, creating labels on
// first use and dropping repeats.
func labelKeys(st *state.World, rp *state.Repo, names []string) []string {
	keys := []string{}
	for _, n := range names {
		if k := state.Key(ensureLabel(st, rp, n).Name); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// replaceLabels sets an issue's labels to want, with an unlabeled webhook for each label
// removed and a labeled one for each added, as GitHub sends them.
func (c *call) replaceLabels(is *state.Issue, want []string) {
	var removed, added []*state.Label
	for _, k := range is.Labels {
		if !slices.Contains(want, k) {
			removed = append(removed, c.repo.Label(k))
		}
	}
	for _, k := range want {
		if !is.HasLabel(k) {
			added = append(added, c.repo.Label(k))
		}
	}
	is.Labels = want
	c.labelsChanged(is, removed, "unlabeled")
	c.labelsChanged(is, added, "labeled")
}

func (a *API) clearIssueLabels(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var removed []*state.Label
	for _, k := range is.Labels {
		removed = append(removed, c.repo.Label(k))
	}
	is.Labels = []string{}
	c.labelsChanged(is, removed, "unlabeled")
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) removeIssueLabel(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	k := state.Key(c.params["name"])
	if !is.HasLabel(k) {
		apierr.Write(w, apierr.New(http.StatusNotFound, "Label does not exist"))
		return
	}
	is.Labels = slices.DeleteFunc(is.Labels, func(l string) bool { return l == k })
	c.labelsChanged(is, []*state.Label{c.repo.Label(k)}, "unlabeled")
	apierr.WriteJSON(w, http.StatusOK, c.rn.Labels(c.repo, is.Labels))
}

// labelsChanged records a label change and sends one webhook per label, as GitHub does.
func (c *call) labelsChanged(is *state.Issue, labels []*state.Label, action string) {
	if len(labels) == 0 {
		return
	}
	is.UpdatedAt = c.st.Timestamp()
	c.st.MarkChanged()
	for _, l := range labels {
		c.emitIssueEvent(is, action, c.who.actor(), obj{"label": c.rn.Label(c.repo, l)})
	}
}

func (a *API) listLabels(w http.ResponseWriter, r *http.Request, c *call) {
	labels := c.repo.Labels()
	lo, hi, err := page(w, r, c.st.BaseURL(), len(labels))
	if err != nil {
		apierr.Write(w, err)
		return
	}
	out := make([]obj, 0, hi-lo)
	for _, l := range labels[lo:hi] {
		out = append(out, c.rn.Label(c.repo, l))
	}
	apierr.WriteJSON(w, http.StatusOK, out)
}

var colorRE = regexp.MustCompile(`^[0-9a-fA-F]{6}$`)

// defaultLabelColor is the color GitHub gives a label created without one.
const defaultLabelColor = "ededed"

func (a *API) createLabel(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if strings.TrimSpace(req.Name) == "" {
		apierr.Write(w, apierr.Validation("Label", "name", "missing_field", "name is required"))
		return
	}
	if c.repo.Label(req.Name) != nil {
		apierr.Write(w, apierr.Validation("Label", "name", "already_exists", ""))
		return
	}
	color := strings.TrimPrefix(req.Color, "#")
	if color == "" {
		color = defaultLabelColor
	}
	if !colorRE.MatchString(color) {
		apierr.Write(w, apierr.Validation("Label", "color", "invalid", "color must be six hex digits"))
		return
	}
	l := &state.Label{ID: c.st.NextID(), Name: req.Name, Color: strings.ToLower(color), Description: req.Description}
	c.repo.AddLabel(l)
	apierr.WriteJSON(w, http.StatusCreated, c.rn.Label(c.repo, l))
}

func (a *API) getLabel(w http.ResponseWriter, r *http.Request, c *call) {
	l := c.repo.Label(c.params["name"])
	if l == nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Label(c.repo, l))
}
