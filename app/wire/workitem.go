package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// WorkItem names a work item: an issue of a repository, written "owner/repo#issue" (the
// dispatch's work_item input, and every JSON field that names one). It is parsed once,
// where it comes in (ParseWorkItem, or JSON decoding), and passed on as this type.
type WorkItem struct {
	Repository string // owner/repo
	Issue      int    // 1 or more
}

// ParseWorkItem parses a work item's name, "owner/repo#issue": an owner and a repository
// name, neither empty nor holding a slash, and an issue number of 1 or more.
func ParseWorkItem(s string) (WorkItem, error) {
	repo, num, ok := strings.Cut(s, "#")
	n, convErr := strconv.Atoi(num)
	owner, name, slash := strings.Cut(repo, "/")
	if !ok || convErr != nil || n < 1 || !slash || owner == "" || name == "" || strings.Contains(name, "/") {
		return WorkItem{}, fmt.Errorf("work item %q: want owner/repo#issue", s)
	}
	return WorkItem{Repository: repo, Issue: n}, nil
}

// String is the work item's name, "owner/repo#issue"; "" for the zero WorkItem.
func (w WorkItem) String() string {
	if w == (WorkItem{}) {
		return ""
	}
	return w.Repository + "#" + strconv.Itoa(w.Issue)
}

// MarshalText writes the name, so that a WorkItem is a JSON string. The zero WorkItem
// is written "" and "" read as the zero WorkItem, as the string this type replaced was:
// a reader that needs a work item checks for the zero one, as it checked for "".
func (w WorkItem) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

// UnmarshalText parses the name as ParseWorkItem does ("" aside, see MarshalText).
func (w *WorkItem) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*w = WorkItem{}
		return nil
	}
	p, err := ParseWorkItem(string(text))
	if err != nil {
		return err
	}
	*w = p
	return nil
}
