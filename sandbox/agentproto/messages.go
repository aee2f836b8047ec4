package agentproto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// Version is the protocol version the agent announces in Hello; the host refuses an
// agent of another version, and a snapshot is only restored by a host of the version it
// was made with (the snapshot key holds it).
//
//   - 1: one Run per boot.
//   - 2: any number of Runs in turn, the guest set up by the first only, the agent user's
//     processes killed and /out written after each.
//   - 3: input while a command runs: its standard input (Stdin, StdinClose) and files
//     placed in its steering directory (Steer, answered by Steered).
const Version = 3

// Hello is the guest's first frame: the agent is up and waits for a Run. It repeats
// until the host's first frame arrives.
type Hello struct {
	Version int `json:"version"`
}

// Network is the guest's static network configuration. The guest sees fixed addresses
// on every run (so a snapshot stays valid); the host side maps them to the run's own.
type Network struct {
	// Address is the guest's eth0 address with prefix, e.g. "10.0.2.15/24".
	Address string `json:"address"`
	// Gateway is the default route's next hop, e.g. "10.0.2.2".
	Gateway string `json:"gateway"`
}

// Validate checks that the addresses parse and the gateway is on the guest's subnet.
func (n *Network) Validate() error {
	p, err := netip.ParsePrefix(n.Address)
	if err != nil || !p.Addr().Is4() {
		return fmt.Errorf("network address %q must be an IPv4 address with prefix, e.g. 10.0.2.15/24", n.Address)
	}
	gw, err := netip.ParseAddr(n.Gateway)
	if err != nil || !p.Contains(gw) {
		return fmt.Errorf("network gateway %q must be an IPv4 address inside %s", n.Gateway, p.Masked())
	}
	return nil
}

// Run asks the agent to run one command. An agent runs any number of them, one at a
// time; the first also sets the guest up (Network, Workspace, GrowRoot), and later ones
// repeat those fields, which the agent then ignores: a guest is set up once per boot.
// After each command the agent kills every process the agent user left, so nothing of
// one command runs during the next, and writes /out to the out disk afresh.
type Run struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH.
	Argv []string `json:"argv"`
	// Env holds extra KEY=VALUE entries added to the agent user's base environment.
	Env []string `json:"env,omitempty"`
	// Dir is the working directory (default /workspace).
	Dir string `json:"dir,omitempty"`
	// ClockUnixNano is the host's wall clock when the frame was sent; the guest sets its
	// clock to it on every Run (a restored snapshot's clock is stale otherwise, and an
	// emulated one drifts).
	ClockUnixNano int64 `json:"clock_unix_nano"`
	// MaxProcs is the RLIMIT_NPROC for the command's user, set for each command.
	MaxProcs uint64 `json:"max_procs"`
	// Network, when set, brings up eth0; without it the guest has only loopback.
	Network *Network `json:"network,omitempty"`
	// Workspace says whether the workspace disk is attached and must be mounted.
	Workspace bool `json:"workspace"`
	// OutMaxBytes caps the tar of /out written to the out disk after the command.
	OutMaxBytes int64 `json:"out_max_bytes"`
	// GrowRoot asks the agent to grow the root filesystem to its disk, which the host
	// made larger than the image's template.
	GrowRoot bool `json:"grow_root,omitempty"`
	// Stdin makes the command's standard input a pipe the host feeds with stdin frames
	// while it runs, until a stdin-close frame (or its end); without it the command
	// reads /dev/null.
	Stdin bool `json:"stdin,omitempty"`
	// Steering gives the command a steering directory, named by SteerDirEnv in its
	// environment: made empty for it, readable by its user and writable only by the
	// agent, which places there the file of each steer frame while the command runs and
	// removes it all when the command ends.
	Steering bool `json:"steering,omitempty"`
}

// Validate checks a Run before the agent acts on it.
func (r *Run) Validate() error {
	if len(r.Argv) == 0 || r.Argv[0] == "" {
		return fmt.Errorf("run request has no command: argv must name a program")
	}
	for _, e := range r.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("run request env entry %q must be KEY=VALUE", e)
		}
	}
	if r.MaxProcs == 0 {
		return fmt.Errorf("run request max_procs must be positive")
	}
	if r.OutMaxBytes <= 0 {
		return fmt.Errorf("run request out_max_bytes must be positive")
	}
	if r.Network != nil {
		if err := r.Network.Validate(); err != nil {
			return fmt.Errorf("run request: %w", err)
		}
	}
	return nil
}

// Result reports how the command ended. The host treats every field as untrusted.
type Result struct {
	// ExitCode is the command's exit status, or -1 when it was killed by a signal or
	// never started.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the command, if any.
	Signal string `json:"signal,omitempty"`
	// Error says why the command could not be started or set up, if it could not.
	Error string `json:"error,omitempty"`
	// OutBytes is the size of the tar written to the out disk after this command; it
	// replaces the one an earlier command left there (an archive ends with its own
	// end-of-archive blocks, so a shorter one is read without the rest of a longer one).
	OutBytes int64 `json:"out_bytes"`
	// OutError says why /out could not be written, if it could not.
	OutError string `json:"out_error,omitempty"`
	// Leftover is how many processes of the command's user were still running when the
	// command ended: the agent ends them before it answers.
	Leftover int `json:"leftover,omitempty"`
	// KillError says why some of them could not be ended, if some could not: the agent
	// then refuses every later command.
	KillError string `json:"kill_error,omitempty"`
}

// Prepare asks an idle agent to get ready to be snapshotted: drop the boot's page cache,
// then run each warm-up command once as the agent user, so that what commands usually
// need (the loader, libc, the locale, the tools' directory entries) is in the
// snapshot's page cache and a restored run does not read it from disk under emulation.
type Prepare struct {
	// WarmUp are commands run with the base environment in /; their output is discarded
	// and their failures ignored.
	WarmUp [][]string `json:"warm_up,omitempty"`
}

// MaxWarmUp bounds the warm-up commands of a Prepare.
const MaxWarmUp = 32

// Validate checks a Prepare before the agent acts on it.
func (p *Prepare) Validate() error {
	if len(p.WarmUp) > MaxWarmUp {
		return fmt.Errorf("prepare request has %d warm-up commands, at most %d are allowed", len(p.WarmUp), MaxWarmUp)
	}
	for i, argv := range p.WarmUp {
		if len(argv) == 0 || argv[0] == "" {
			return fmt.Errorf("prepare request warm-up command %d is empty: it must name a program", i)
		}
	}
	return nil
}

// maxText bounds the free-text fields of a Result or SteerAck the host will keep.
const maxText = 4096

// SteerDirEnv names a command's steering directory in its environment (Run.Steering).
const SteerDirEnv = "BUMPER_STEER_DIR"

// Bounds of a steering directory: a file's size, and the files one command may be
// given. A steer frame (the file as JSON, its data in base64) stays far below
// MaxFrameSize.
const (
	MaxSteerFile  = 64 << 10
	MaxSteerFiles = 256
)

// maxSteerName bounds a steering file's name.
const maxSteerName = 100

// SteerFile is a file the host places in the running command's steering directory.
type SteerFile struct {
	// Name is the file's name in the directory (CheckSteerName); no file of that name
	// may be there already.
	Name string `json:"name"`
	// Data is the file's content, at most MaxSteerFile bytes.
	Data []byte `json:"data"`
}

// Validate checks a SteerFile before it is sent or placed.
func (f *SteerFile) Validate() error {
	if err := CheckSteerName(f.Name); err != nil {
		return err
	}
	if len(f.Data) > MaxSteerFile {
		return fmt.Errorf("steering file %s is %d bytes, more than the %d allowed", f.Name, len(f.Data), MaxSteerFile)
	}
	return nil
}

// CheckSteerName says why name cannot be a steering file's: it must be one path
// component of letters, digits, '.', '_' and '-', starting with a letter or a digit (so
// never "." or "..", a hidden file or the agent's own temporary names), at most 100
// bytes.
func CheckSteerName(name string) error {
	if name == "" || len(name) > maxSteerName {
		return fmt.Errorf("steering file name %q must be 1 to %d bytes", name, maxSteerName)
	}
	for i, c := range []byte(name) {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("steering file name %q must be letters, digits, '.', '_' and '-', starting with a letter or digit", name)
		}
	}
	return nil
}

// SteerAck is the guest's answer to a steer frame: the file is in the steering
// directory (Error empty), or why it is not. The host treats it as untrusted: it must
// name a file the host sent and has not heard of yet.
type SteerAck struct {
	Name  string `json:"name"`
	Error string `json:"error,omitempty"`
}

// Validate checks a SteerAck received from a guest.
func (a *SteerAck) Validate() error {
	if err := CheckSteerName(a.Name); err != nil {
		return fmt.Errorf("guest steering answer: %w", err)
	}
	if len(a.Error) > maxText {
		return fmt.Errorf("guest steering answer's error exceeds %d bytes", maxText)
	}
	return nil
}

// Validate checks a Result received from a guest.
func (r *Result) Validate() error {
	if r.ExitCode < -1 || r.ExitCode > 255 {
		return fmt.Errorf("guest result exit code %d outside -1..255", r.ExitCode)
	}
	if r.OutBytes < 0 || r.Leftover < 0 {
		return fmt.Errorf("guest result out_bytes %d or leftover %d is negative", r.OutBytes, r.Leftover)
	}
	if len(r.Signal) > 32 || len(r.Error) > maxText || len(r.OutError) > maxText || len(r.KillError) > maxText {
		return fmt.Errorf("guest result text fields exceed %d bytes", maxText)
	}
	return nil
}

// Encode marshals v as a frame payload.
func Encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("failed to encode %T: %w", v, err)
	}
	return b, nil
}

// Decode unmarshals a frame payload strictly (unknown fields are an error) and runs the
// value's Validate method when it has one.
func Decode(payload []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("failed to decode %T: %w", v, err)
	}
	if dec.More() {
		return fmt.Errorf("failed to decode %T: trailing data after the JSON value", v)
	}
	if val, ok := v.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			return err
		}
	}
	return nil
}
