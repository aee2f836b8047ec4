package repoconfig

import (
	"fmt"
	"math"
	"slices"

	"gopkg.in/yaml.v3"
)

// DefaultMinConfidence is the confidence an approving verdict needs, by default, for the
// bumper/verdict check to succeed.
const DefaultMinConfidence = 0.8

// MaxFixRounds bounds bounds.fix_rounds: each round is a run of its own after the pull
// request, and a check that keeps failing should reach a human soon.
const MaxFixRounds = 10

// Rounds of the conversation on the pull request: bounds.review_rounds (revise rounds,
// answering writers' reviews, /revise and, by choice, the reviewer's findings) and
// bounds.update_rounds (the base branch merged in when the pull request conflicts).
const (
	DefaultReviewRounds = 3
	MaxReviewRounds     = 20
	DefaultUpdateRounds = 2
	MaxUpdateRounds     = 10
)

// Reviewer is the `reviewer:` section. It is on unless the file says `reviewer: false`;
// `reviewer: true` and a mapping turn it on:
//
//	reviewer:
//	  harness: {name: claude-code, version: 2.1.328}   # default: the repository's harness
//	  min_confidence: 0.8                              # for bumper/verdict to succeed
type Reviewer struct {
	// Off is `reviewer: false`: the run that opens the pull request hands it to humans
	// itself, and no bumper/verdict check is posted.
	Off bool
	// Harness is the reviewer's agent; its zero value means the repository's harness.
	Harness Harness
	// MinConfidence is the confidence an approve verdict needs for the bumper/verdict
	// check to succeed, from 0 to 1.
	MinConfidence float64
	// ReviseOnFindings makes a failing verdict with findings start a revise round with
	// the findings as its task, within bounds.review_rounds (default false: the findings
	// wait for a person).
	ReviseOnFindings bool
}

// reviewerKeys are the keys of the mapping form; anything else is refused, as
// everywhere in the file.
var reviewerKeys = []string{"harness", "min_confidence", "revise_on_findings"}

// UnmarshalYAML reads `reviewer: true|false` or the mapping, strictly.
func (r *Reviewer) UnmarshalYAML(n *yaml.Node) error {
	*r = Reviewer{MinConfidence: DefaultMinConfidence}
	switch n.Kind {
	case yaml.ScalarNode:
		var on bool
		if err := n.Decode(&on); err != nil {
			return fmt.Errorf("%s: reviewer is %q: want true, false or a mapping with harness and min_confidence", Path, n.Value)
		}
		r.Off = !on
		return nil
	case yaml.MappingNode:
		// The nested decode does not inherit the file's strictness: every key is checked
		// here, the harness's too.
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch k := n.Content[i].Value; {
			case !slices.Contains(reviewerKeys, k):
				return fmt.Errorf("%s: reviewer.%s is not a reviewer setting; use harness, min_confidence or revise_on_findings (or `reviewer: false`)", Path, k)
			case k == "harness":
				if err := knownKeys(n.Content[i+1], "reviewer.harness", "name", "version", "command", "model"); err != nil {
					return err
				}
			}
		}
		var m struct {
			Harness          Harness  `yaml:"harness"`
			MinConfidence    *float64 `yaml:"min_confidence"`
			ReviseOnFindings bool     `yaml:"revise_on_findings"`
		}
		if err := n.Decode(&m); err != nil {
			return fmt.Errorf("failed to read %s reviewer: %w", Path, err)
		}
		r.Harness, r.ReviseOnFindings = m.Harness, m.ReviseOnFindings
		if m.MinConfidence != nil {
			r.MinConfidence = *m.MinConfidence
		}
		return nil
	default:
		return fmt.Errorf("%s: reviewer: want true, false or a mapping with harness and min_confidence", Path)
	}
}

// knownKeys refuses a mapping key that is not one of keys.
func knownKeys(n *yaml.Node, field string, keys ...string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: %s must be a mapping", Path, field)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !slices.Contains(keys, k) {
			return fmt.Errorf("%s: %s.%s is not a known setting (known: %v)", Path, field, k, keys)
		}
	}
	return nil
}

// check validates the section.
func (r Reviewer) check() error {
	if r.Off && r.Harness.Name != "" {
		return fmt.Errorf("%s: the reviewer is off but names a harness", Path)
	}
	if math.IsNaN(r.MinConfidence) || r.MinConfidence < 0 || r.MinConfidence > 1 {
		return fmt.Errorf("%s: reviewer.min_confidence is %v; use a number from 0 to 1 (default %.1f)", Path, r.MinConfidence, DefaultMinConfidence)
	}
	if r.Harness.Name == "" && (r.Harness.Version != "" || r.Harness.Command != "" || r.Harness.Model != "") {
		return fmt.Errorf("%s: reviewer.harness.name is missing; use %s, %s or %s", Path, HarnessCommand, HarnessClaudeCode, HarnessCodex)
	}
	if err := r.Harness.check(); err != nil {
		return fmt.Errorf("reviewer: %w", err)
	}
	return nil
}
