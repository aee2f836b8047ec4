package verify

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
)

// maxJUnitDepth bounds how deep a JUnit report nests (testsuites, testsuite, nested
// suites, testcase, failure: real reports stay under ten).
const maxJUnitDepth = 64

// junitResult is what a JUnit report says.
type junitResult struct {
	passed, failed, skipped int
	failures                []evidence.Failure
}

// junitCase is the testcase being read.
type junitCase struct {
	name    string
	failed  bool
	skipped bool
	text    clip // failure and error messages and bodies, then system-out and system-err
	// into says which of the case's elements the text being read belongs to.
	into string
}

// parseJUnit reads a JUnit XML report as tools print it: every <testcase> counts,
// wherever it sits (node's reporter puts top-level tests straight under
// <testsuites>), with <failure> or <error> failing it and <skipped> skipping it.
// The report is read as a stream of tokens, so memory stays within the document's
// size however it nests; it ends where its root element closes, and what follows is
// ignored.
func parseJUnit(doc []byte) (*junitResult, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = false // tools write HTML entities and unescaped "<" in messages
	d.Entity = xml.HTMLEntity
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var (
		res   junitResult
		depth int
		cur   *junitCase
		root  string
	)
	for {
		tok, err := d.Token()
		var syntax *xml.SyntaxError
		if errors.Is(err, io.EOF) || errors.As(err, &syntax) && syntax.Msg == "unexpected EOF" {
			return nil, fmt.Errorf("the JUnit report ends before its <%s> closes", cutName(root))
		}
		if err != nil {
			return nil, fmt.Errorf("the JUnit report does not parse: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > maxJUnitDepth {
				return nil, fmt.Errorf("the JUnit report nests deeper than %d elements", maxJUnitDepth)
			}
			if depth == 1 {
				root = t.Name.Local
				if root != "testsuites" && root != "testsuite" {
					return nil, fmt.Errorf("the JUnit report starts with <%s>, not <testsuites> or <testsuite>", cutName(root))
				}
			}
			switch name := t.Name.Local; {
			case name == "testcase" && cur == nil:
				cur = &junitCase{name: caseName(attr(t, "classname"), attr(t, "name"))}
			case cur == nil:
			case name == "failure" || name == "error":
				cur.failed = true
				cur.into = name
				if m := attr(t, "message"); m != "" {
					cur.text.WriteString(m + "\n")
				}
			case name == "skipped":
				cur.skipped = true
			case name == "system-out" || name == "system-err":
				cur.into = name
			}
		case xml.CharData:
			if cur != nil && cur.into != "" {
				cur.text.Write(t)
			}
		case xml.EndElement:
			depth--
			switch name := t.Name.Local; {
			case cur == nil:
			case name == "testcase":
				res.add(cur)
				cur = nil
			case name == cur.into:
				cur.text.WriteString("\n")
				cur.into = ""
			}
			if depth == 0 {
				return &res, nil
			}
		}
	}
}

// add counts a testcase.
func (r *junitResult) add(c *junitCase) {
	switch {
	case c.failed:
		r.failed++
		if len(r.failures) < evidence.MaxFailures {
			r.failures = append(r.failures, newFailure(c.name, strings.TrimSpace(c.text.String())))
		}
	case c.skipped:
		r.skipped++
	default:
		r.passed++
	}
}

func attr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// caseName is a testcase's name as its tools show it: classname.name.
func caseName(classname, name string) string {
	switch {
	case classname == "" || classname == name:
		return name
	case name == "":
		return classname
	default:
		return classname + "." + name
	}
}
