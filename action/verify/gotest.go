package verify

import (
	"encoding/json"
	"slices"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/internal/textcut"
)

// testEvent is one line of `go test -json` (cmd/test2json's TestEvent, with the
// build events `go test -json` adds since Go 1.24).
type testEvent struct {
	Action      string  `json:"Action"`
	Package     string  `json:"Package"`
	ImportPath  string  `json:"ImportPath"` // build-output, build-fail
	Test        string  `json:"Test"`
	Output      *string `json:"Output"`
	FailedBuild string  `json:"FailedBuild"`
}

// testActions are the actions of test2json events; a JSON line with another action is
// not one of its events.
var testActions = map[string]bool{
	"start": true, "run": true, "pause": true, "cont": true, "pass": true, "bench": true,
	"fail": true, "output": true, "skip": true, "build-output": true, "build-fail": true,
}

// Bounds of the go test parser's memory, whatever the stream holds.
const (
	// maxName bounds a test's or package's name, in bytes (the bundle's bound).
	maxName = 1000
	// maxTracked bounds the packages and running tests followed at once; past it,
	// tests are still counted but their output is not kept.
	maxTracked = 10000
)

// goTestParser reads a `go test -json` stream: counts per test (subtests included, as
// go test reports them), and for each failing test its output; a package that fails
// without a failing test (a build failure, a panic outside a test, a timeout) is a
// failure of its own.
type goTestParser struct {
	seen     bool
	pkgs     map[string]*pkgState
	builds   map[string]*clip // build output by ImportPath
	tracked  int
	clips    int // clips held
	maxClips int

	passed, failed, skipped int
	failures                []evidence.Failure
}

type pkgState struct {
	out         *clip
	running     map[string]*clip // running tests; nil clip when their output is not kept
	order       []string         // running tests in the order they started
	failedTests int
	done        bool
}

func newGoTestParser(maxBytes int64) *goTestParser {
	return &goTestParser{
		pkgs:     map[string]*pkgState{},
		builds:   map[string]*clip{},
		maxClips: int(max(16, maxBytes/clipHeld)),
	}
}

// newClip is a clip when the memory bound allows one more, else nil.
func (p *goTestParser) newClip() *clip {
	if p.clips >= p.maxClips {
		return nil
	}
	p.clips++
	return &clip{}
}

func (p *goTestParser) freeClip(c *clip) {
	if c != nil {
		p.clips--
	}
}

// line reads one line of stdout; lines that are not test2json events are ignored.
func (p *goTestParser) line(b []byte) {
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var e testEvent
	if json.Unmarshal(b, &e) != nil || !testActions[e.Action] || (e.Package == "" && e.ImportPath == "") {
		return
	}
	p.seen = true
	e.Package, e.ImportPath = cutName(e.Package), cutName(e.ImportPath)
	e.Test, e.FailedBuild = cutName(e.Test), cutName(e.FailedBuild)
	switch e.Action {
	case "build-output":
		c, ok := p.builds[e.ImportPath]
		if !ok && p.tracked < maxTracked {
			p.tracked++
			c = p.newClip()
			p.builds[e.ImportPath] = c
		}
		if c != nil && e.Output != nil {
			c.WriteString(*e.Output)
		}
		return
	case "build-fail", "bench", "pause", "cont":
		return
	}
	pkg := p.pkg(e.Package)
	switch {
	case e.Test == "":
		p.packageEvent(e, pkg)
	case pkg == nil:
		// Not followed (past maxTracked): counted only.
		p.count(e, nil, nil)
	default:
		p.testEvent(e, pkg)
	}
}

// pkg is the package's state, made on first sight while there is room; nil past it.
func (p *goTestParser) pkg(name string) *pkgState {
	if s, ok := p.pkgs[name]; ok {
		return s
	}
	if p.tracked >= maxTracked {
		return nil
	}
	p.tracked++
	s := &pkgState{running: map[string]*clip{}}
	p.pkgs[name] = s
	return s
}

func (p *goTestParser) testEvent(e testEvent, pkg *pkgState) {
	out, running := pkg.running[e.Test]
	switch e.Action {
	case "run":
		if !running && p.tracked < maxTracked {
			p.tracked++
			pkg.running[e.Test] = p.newClip()
			pkg.order = append(pkg.order, e.Test)
		}
	case "output":
		if out != nil && e.Output != nil {
			out.WriteString(*e.Output)
		}
	case "pass", "skip", "fail":
		p.count(e, pkg, out)
		if running {
			p.freeClip(out)
			p.tracked--
			delete(pkg.running, e.Test)
		}
	}
}

// count counts a test's result; a failure keeps its output.
func (p *goTestParser) count(e testEvent, pkg *pkgState, out *clip) {
	switch e.Action {
	case "pass":
		p.passed++
	case "skip":
		p.skipped++
	case "fail":
		p.failed++
		if pkg != nil {
			pkg.failedTests++
		}
		p.addFailure(e.Package+"."+e.Test, excerptOf(out, "(none of its output was kept)"))
	}
}

func (p *goTestParser) packageEvent(e testEvent, pkg *pkgState) {
	if pkg == nil {
		return
	}
	switch e.Action {
	case "output":
		if e.Output != nil {
			if pkg.out == nil {
				pkg.out = p.newClip()
			}
			if pkg.out != nil {
				pkg.out.WriteString(*e.Output)
			}
		}
	case "pass", "skip", "fail":
		if pkg.done {
			return
		}
		pkg.done = true
		p.endPackage(e.Package, pkg, e.Action == "fail", e.FailedBuild, "")
	}
}

// endPackage ends a package: tests still running did not finish, and a failed package
// without a failed test is a failure of its own.
func (p *goTestParser) endPackage(name string, pkg *pkgState, failed bool, failedBuild, why string) {
	for _, test := range pkg.order {
		out, running := pkg.running[test]
		if !running {
			continue
		}
		p.failed++
		pkg.failedTests++
		p.addFailure(name+"."+test, excerptOf(out, "")+"\n[no result: "+orDefault(why, "its package ended while it ran")+"]")
		p.freeClip(out)
		delete(pkg.running, test)
	}
	pkg.order = nil
	if !failed || pkg.failedTests > 0 {
		return
	}
	p.failed++
	label, text := name+" [package failed]", ""
	if failedBuild != "" {
		label = name + " [build failed]"
		if b := p.builds[failedBuild]; b != nil {
			text = b.String()
		}
	}
	text += excerptOf(pkg.out, "")
	if why != "" {
		text += "\n[" + why + "]"
	}
	p.addFailure(label, text)
}

// finish ends the packages the stream left open: it was cut.
func (p *goTestParser) finish() {
	names := make([]string, 0, len(p.pkgs))
	for name, pkg := range p.pkgs {
		if !pkg.done && (len(pkg.running) > 0 || pkg.out != nil) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		pkg := p.pkgs[name]
		pkg.done = true
		p.endPackage(name, pkg, true, "", "the output ended before the package's result")
	}
}

func (p *goTestParser) addFailure(name, excerpt string) {
	if len(p.failures) < evidence.MaxFailures {
		p.failures = append(p.failures, newFailure(name, excerpt))
	}
}

// excerptOf is c's excerpt, or none when it was not kept.
func excerptOf(c *clip, none string) string {
	if c == nil {
		return none
	}
	return c.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// cutName bounds a name taken from the stream, in bytes, on a character boundary.
func cutName(s string) string {
	if len(s) <= maxName {
		return s
	}
	return textcut.Fit(s, maxName, textcut.Ellipsis)
}
