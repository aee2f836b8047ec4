package ghemu

import (
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
)

func (e *Emulator) listIssueLabels(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		writeError(w, err)
		return
	}
	lo, hi, err := page(w, r, e.baseURL, len(is.Labels))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.renderLabels(c.repo, is.Labels[lo:hi]))
}

// labelNames accepts both request shapes GitHub documents: {"labels": ["a"]} and a
// bare array ["a"].
func labelNames(r *http.Request) ([]string, error) {
	var raw any
	if err := decode(r, &raw); err != nil {
		return nil, err
	}
	var list []any
	switch v := raw.(type) {
	case []any:
		list = v
	case map[string]any:
		l, ok := v["labels"].([]any)
		if !ok {
			return nil, errValidation("Label", "labels", "missing_field", "labels must be an array of names")
		}
		list = l
	default:
		return nil, errValidation("Label", "labels", "invalid", "labels must be an array of names")
	}
	names := make([]string, 0, len(list))
	for _, item := range list {
		switch v := item.(type) {
		case string:
			if strings.TrimSpace(v) == "" {
				return nil, errValidation("Label", "name", "missing_field", "label names cannot be blank")
			}
			names = append(names, v)
		case map[string]any:
			n, ok := v["name"].(string)
			if !ok || strings.TrimSpace(n) == "" {
				return nil, errValidation("Label", "name", "missing_field", "label name is required")
			}
			names = append(names, n)
		default:
			return nil, errValidation("Label", "labels", "invalid", "labels must be names")
		}
	}
	return names, nil
}

func (e *Emulator) addIssueLabels(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		writeError(w, err)
		return
	}
	names, err := labelNames(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var added []*label
	for _, n := range names {
		l := e.ensureLabel(c.repo, n)
		if !is.hasLabel(key(l.Name)) {
			is.Labels = append(is.Labels, key(l.Name))
			added = append(added, l)
		}
	}
	e.labelsChanged(c, is, added, "labeled")
	writeJSON(w, http.StatusOK, e.renderLabels(c.repo, is.Labels))
}

func (e *Emulator) setIssueLabels(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		writeError(w, err)
		return
	}
	names, err := labelNames(r)
	if err != nil {
		writeError(w, err)
		return
	}
	e.replaceLabels(c, is, e.labelKeys(c.repo, names))
	writeJSON(w, http.StatusOK, e.renderLabels(c.repo, is.Labels))
}

// labelKeys turns label names into the repository's label keys, creating labels on
// first use and dropping repeats.
func (e *Emulator) labelKeys(rp *repo, names []string) []string {
	keys := []string{}
	for _, n := range names {
		if k := key(e.ensureLabel(rp, n).Name); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// replaceLabels sets an issue's labels to want, with an unlabeled webhook for each label
// removed and a labeled one for each added, as GitHub sends them.
func (e *Emulator) replaceLabels(c *call, is *issue, want []string) {
	var removed, added []*label
	for _, k := range is.Labels {
		if !slices.Contains(want, k) {
			removed = append(removed, c.repo.Labels[k])
		}
	}
	for _, k := range want {
		if !is.hasLabel(k) {
			added = append(added, c.repo.Labels[k])
		}
	}
	is.Labels = want
	e.labelsChanged(c, is, removed, "unlabeled")
	e.labelsChanged(c, is, added, "labeled")
}

func (e *Emulator) clearIssueLabels(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		writeError(w, err)
		return
	}
	var removed []*label
	for _, k := range is.Labels {
		removed = append(removed, c.repo.Labels[k])
	}
	is.Labels = []string{}
	e.labelsChanged(c, is, removed, "unlabeled")
	w.WriteHeader(http.StatusNoContent)
}

func (e *Emulator) removeIssueLabel(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		writeError(w, err)
		return
	}
	k := key(c.params["name"])
	if !is.hasLabel(k) {
		writeError(w, newError(http.StatusNotFound, "Label does not exist"))
		return
	}
	is.Labels = slices.DeleteFunc(is.Labels, func(l string) bool { return l == k })
	e.labelsChanged(c, is, []*label{c.repo.Labels[k]}, "unlabeled")
	writeJSON(w, http.StatusOK, e.renderLabels(c.repo, is.Labels))
}

// labelsChanged records a label change and sends one webhook per label, as GitHub does.
func (e *Emulator) labelsChanged(c *call, is *issue, labels []*label, action string) {
	if len(labels) == 0 {
		return
	}
	is.UpdatedAt = e.timestamp()
	c.mutated = true
	for _, l := range labels {
		e.emitIssueEvent(c.repo, is, action, c.who.actor(), obj{"label": e.renderLabel(c.repo, l)})
	}
}

func (e *Emulator) listLabels(w http.ResponseWriter, r *http.Request, c *call) {
	keys := make([]string, 0, len(c.repo.Labels))
	for k := range c.repo.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lo, hi, err := page(w, r, e.baseURL, len(keys))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.renderLabels(c.repo, keys[lo:hi]))
}

var colorRE = regexp.MustCompile(`^[0-9a-fA-F]{6}$`)

// defaultLabelColor is the color GitHub gives a label created without one.
const defaultLabelColor = "ededed"

func (e *Emulator) createLabel(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if strings.TrimSpace(req.Name) == "" {
		writeError(w, errValidation("Label", "name", "missing_field", "name is required"))
		return
	}
	if c.repo.Labels[key(req.Name)] != nil {
		writeError(w, errValidation("Label", "name", "already_exists", ""))
		return
	}
	color := strings.TrimPrefix(req.Color, "#")
	if color == "" {
		color = defaultLabelColor
	}
	if !colorRE.MatchString(color) {
		writeError(w, errValidation("Label", "color", "invalid", "color must be six hex digits"))
		return
	}
	l := &label{ID: e.st.nextID(), Name: req.Name, Color: strings.ToLower(color), Description: req.Description}
	c.repo.Labels[key(l.Name)] = l
	c.mutated = true
	writeJSON(w, http.StatusCreated, e.renderLabel(c.repo, l))
}

func (e *Emulator) getLabel(w http.ResponseWriter, r *http.Request, c *call) {
	l := c.repo.Labels[key(c.params["name"])]
	if l == nil {
		writeError(w, errNotFound())
		return
	}
	writeJSON(w, http.StatusOK, e.renderLabel(c.repo, l))
}
