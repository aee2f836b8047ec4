package ghaction

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sethvargo/go-githubactions"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/sandbox"
)

// Inputs are the action's inputs as `bumper run` uses them, checked, with defaults
// applied.
type Inputs struct {
	URL      string        // `url`: serve's base URL
	WorkItem wire.WorkItem // `work_item`: owner/repo#N, parsed
	Attempt  int           // `attempt`: 1 or more
	Nonce    string        // `nonce`: masked as soon as it is read
	Stage    wire.Stage    // `stage`: one of wire.Stages()
	Image    string        // `image`: an image directory; "" builds or reuses the default image in Cache
	Cache    string        // `cache`: image and snapshot cache
	Accel    string        // `accel`: auto, kvm or tcg
	// AllowTCG (`allow-tcg`) lets the run go on under TCG (software emulation, slow) when
	// KVM does not work.
	AllowTCG bool
	CPUs     int    // `cpus`: the VM's vCPUs
	Memory   string // `memory`: the VM's memory, such as 2G or 1536M (MemoryMB parses it)
	Out      string // `out`: the run's output directory
	QEMUUser string // `qemu-user`: the user QEMU drops to
	// AllowInsecureHTTP (`allow-insecure-http`) allows an http:// serve URL to a host other
	// than the loopback (on a network private to the runner and serve only).
	AllowInsecureHTTP bool
}

// MemoryMB is Memory in MiB. ReadInputs has checked that it parses.
func (in Inputs) MemoryMB() int {
	mb, _ := sandbox.ParseSize(in.Memory)
	return mb
}

var (
	qemuUserRE = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_.-]{0,31}|[0-9]{1,10}(?::[0-9]{1,10})?)$`)
	nonceRE    = regexp.MustCompile(`^[\x21-\x7e]{1,512}$`)
)

// ReadInputs reads and checks the action's inputs from a's environment and applies the
// defaults of InputSpecs. The nonce is masked (inside Actions) before anything else is
// checked. The error lists every problem at once, each saying what to set. An input
// whose name has a hyphen may also be given with an underscore (INPUT_ALLOW_TCG), which
// a shell can export; the hyphen form wins.
func ReadInputs(a *githubactions.Action) (Inputs, error) {
	r := &inputReader{a: a}
	var in Inputs
	r.dispatch(&in)
	r.serve(&in)
	r.vm(&in)
	if len(r.errs) > 0 {
		return in, fmt.Errorf("the action's inputs are not usable:\n%w", errors.Join(r.errs...))
	}
	return in, nil
}

// inputReader reads the action's inputs and gathers every problem, so that one run of
// the workflow shows them all.
type inputReader struct {
	a    *githubactions.Action
	errs []error
}

// get is an input's value: under its name, or with underscores for dashes, or its
// default.
func (r *inputReader) get(name string) string {
	v := r.a.GetInput(name)
	if v == "" && strings.Contains(name, "-") {
		v = r.a.GetInput(strings.ReplaceAll(name, "-", "_"))
	}
	if v == "" {
		for _, s := range InputSpecs() {
			if s.Name == name {
				v = s.Default
			}
		}
	}
	return v
}

func (r *inputReader) bad(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

// dispatch reads what the App dispatched the run with: the nonce, the work item, the
// attempt and the stage.
func (r *inputReader) dispatch(in *Inputs) {
	in.Nonce = r.get(InputNonce)
	if in.Nonce != "" && inActions(r.a) {
		r.a.AddMask(in.Nonce)
	}
	switch {
	case in.Nonce == "":
		r.bad("input `%s` is empty: it is the single-use nonce the App dispatched the run with; the runner workflow passes ${{ inputs.%s }}", InputNonce, wire.DispatchInputNonce)
	case !nonceRE.MatchString(in.Nonce):
		// Never quoted: it is a secret, whatever it looks like.
		r.bad("input `%s` is not a nonce the App makes (printable ASCII without spaces, at most 512 characters): pass the dispatch's nonce input unchanged", InputNonce)
	}
	if s := r.get(InputWorkItem); s == "" {
		r.bad("input `%s` is empty: the App dispatches it as owner/repo#issue; the runner workflow passes ${{ inputs.%s }}", InputWorkItem, wire.DispatchInputWorkItem)
	} else if w, err := wire.ParseWorkItem(s); err != nil {
		r.bad("input `%s`: %w", InputWorkItem, err)
	} else {
		in.WorkItem = w
	}
	if s := r.get(InputAttempt); s == "" {
		r.bad("input `%s` is empty: the App dispatches the attempt number; the runner workflow passes ${{ inputs.%s }}", InputAttempt, wire.DispatchInputAttempt)
	} else if n, err := strconv.Atoi(s); err != nil || n < 1 {
		r.bad("input `%s` is %q: want the attempt number the App dispatched, 1 or more", InputAttempt, s)
	} else {
		in.Attempt = n
	}
	if s := wire.Stage(r.get(InputStage)); s == "" {
		r.bad("input `%s` is empty: the App dispatches it; the runner workflow passes ${{ inputs.%s }}", InputStage, wire.DispatchInputStage)
	} else if !slices.Contains(wire.Stages(), s) {
		r.bad("input `%s` is %q: want one of %s", InputStage, s, stageNames())
	} else {
		in.Stage = s
	}
}

// serve reads where serve is and whether plain http may reach it.
func (r *inputReader) serve(in *Inputs) {
	in.AllowInsecureHTTP = readBool(r.get, InputAllowInsecureHTTP, r.bad)
	in.URL = r.get(InputURL)
	if in.URL == "" {
		r.bad("input `%s` is empty: set it to serve's base URL (https://…); the runner workflow passes the repository or organisation variable BUMPER_URL (docs/action.md, \"The runner workflow\")", InputURL)
		return
	}
	var opts []appclient.Option
	if in.AllowInsecureHTTP {
		opts = append(opts, appclient.AllowInsecureHTTP())
	}
	if _, err := appclient.New(in.URL, opts...); err != nil {
		r.bad("input `%s`: %w (input `%s: true` allows plain http on a private network)", InputURL, err, InputAllowInsecureHTTP)
	}
}

// vm reads the runner host's side: the image, its cache, the accelerator, the VM's
// shape, the output directory and the user QEMU drops to.
func (r *inputReader) vm(in *Inputs) {
	in.Image = r.get(InputImage)
	if in.Image != "" && !filepath.IsAbs(in.Image) {
		r.bad("input `%s` is %q: give the image directory's absolute path (bumper image build prints it), or leave it empty for the default image", InputImage, in.Image)
	}
	in.Cache = r.get(InputCache)
	if !filepath.IsAbs(in.Cache) {
		r.bad("input `%s` is %q: give an absolute directory (default %s)", InputCache, in.Cache, defaultOf(InputCache))
	}
	in.Accel = r.get(InputAccel)
	if accels := []string{sandbox.AccelAuto, sandbox.AccelKVM, sandbox.AccelTCG}; !slices.Contains(accels, in.Accel) {
		r.bad("input `%s` is %q: want %s", InputAccel, in.Accel, strings.Join(accels, ", "))
	}
	in.AllowTCG = readBool(r.get, InputAllowTCG, r.bad)
	if s := r.get(InputCPUs); s != "" {
		if n, err := strconv.Atoi(s); err != nil || n < 1 || n > 64 {
			r.bad("input `%s` is %q: want a number of vCPUs from 1 to 64", InputCPUs, s)
		} else {
			in.CPUs = n
		}
	}
	in.Memory = r.get(InputMemory)
	if mb, err := sandbox.ParseSize(in.Memory); err != nil {
		r.bad("input `%s`: %w", InputMemory, err)
	} else if mb < 128 {
		r.bad("input `%s` is %q: the guest needs at least 128M", InputMemory, in.Memory)
	}
	in.Out = r.a.GetInput(InputOut)
	if in.Out == "" {
		in.Out = filepath.Join(runnerTemp(r.a), OutDirName)
	} else if !filepath.IsAbs(in.Out) {
		r.bad("input `%s` is %q: give an absolute directory, or leave it empty for $RUNNER_TEMP/%s", InputOut, in.Out, OutDirName)
	}
	in.QEMUUser = r.get(InputQEMUUser)
	if !qemuUserRE.MatchString(in.QEMUUser) {
		r.bad("input `%s` is %q: want a user name, a uid or uid:gid (default %s; a dedicated system user is best)", InputQEMUUser, in.QEMUUser, defaultOf(InputQEMUUser))
	}
}

// readBool reads a boolean input as @actions/core's getBooleanInput does: YAML 1.2's
// true, True, TRUE, false, False, FALSE.
func readBool(get func(string) string, name string, bad func(string, ...any)) bool {
	switch v := get(name); v {
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	default:
		bad("input `%s` is %q: want true or false", name, v)
		return false
	}
}

// stageNames lists the stages for a person: "plan, implement, fix, review".
func stageNames() string {
	var names []string
	for _, s := range wire.Stages() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

func defaultOf(name string) string {
	for _, s := range InputSpecs() {
		if s.Name == name {
			return s.Default
		}
	}
	return ""
}

// runnerTemp is $RUNNER_TEMP, or the system's temporary directory outside Actions.
func runnerTemp(a *githubactions.Action) string {
	if d := a.Getenv("RUNNER_TEMP"); d != "" {
		return d
	}
	return os.TempDir()
}

// inActions reports whether a runs under GitHub Actions (or a runner that says so).
func inActions(a *githubactions.Action) bool { return a.Getenv("GITHUB_ACTIONS") == "true" }
