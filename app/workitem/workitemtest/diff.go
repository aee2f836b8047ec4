package workitemtest

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/app/workitem"
)

// diffLine is a line of a pull request's diff a review comment can sit on.
type diffLine struct {
	path, side string
	line       int
}

var hunk = regexp.MustCompile(`^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@`)

// diffLines are the lines GitHub resolves a review comment's path, side and line to:
// removed lines on the LEFT, added ones on the RIGHT, context lines on both.
func diffLines(files []workitem.PullFile) map[diffLine]bool {
	out := map[diffLine]bool{}
	for _, f := range files {
		var left, right int
		inHunk := false
		for _, l := range strings.Split(f.Patch, "\n") {
			if m := hunk.FindStringSubmatch(l); m != nil {
				left, _ = strconv.Atoi(m[1])
				right, _ = strconv.Atoi(m[2])
				inHunk = true
				continue
			}
			if !inHunk || l == "" {
				continue
			}
			switch l[0] {
			case '-':
				out[diffLine{f.Path, "LEFT", left}] = true
				left++
			case '+':
				out[diffLine{f.Path, "RIGHT", right}] = true
				right++
			case ' ':
				out[diffLine{f.Path, "LEFT", left}] = true
				out[diffLine{f.Path, "RIGHT", right}] = true
				left++
				right++
			}
		}
	}
	return out
}
