// Package runner is what `bumper run` does on a self-hosted runner host: it turns one
// dispatched run of the runner workflow into a pull request with evidence.
//
// The run, each step a phase of the evidence: exchange the Actions OIDC token and the
// dispatch nonce at serve for the run's credentials and task; read the repository's
// .github/bumper.yml at the approved base commit; start the firewall for this run only
// (inside the sandbox session, on the host end of the VM's network); prepare the
// workspace on the host through the firewall's git gateway; boot the VM; run the
// harness, then the verification commands, giving failures back for at most
// bounds.verification_rounds rounds; bundle the work, check it on the host, push it
// through the git gateway; open the pull request and the evidence check run as the
// App; report to serve; and revoke the installation token whatever happened. /stop
// reaches a running run through serve's should-stop, which the run polls.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/bumperdev/bumper/action/credentials"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/slots"
)

// Files the run leaves in Config.Out, the run's artifact.
const (
	EvidenceFile         = evidence.FileName
	EvidenceMarkdownFile = "evidence.md"
	AuditFile            = "audit.jsonl"
	DiffFile             = "pr.diff"
	PlanFile             = "plan.md"
	DecisionsFile        = "decisions.json"
	// WorkBundleFile is the agent's work as a git bundle, kept when the output gates
	// block the push.
	WorkBundleFile = "work.bundle"
	// EnvironmentLogFile and EnvironmentAuditFile are the environment's setup output
	// and its firewall's audit log, when this run ran the setup.
	EnvironmentLogFile   = "environment.log"
	EnvironmentAuditFile = "environment-audit.jsonl"
	// TranscriptPattern and VerificationPattern name each round's logs.
	TranscriptPattern   = "agent-round-%d.log"
	VerificationPattern = "verification-round-%d.log"
)

// Defaults of Config.
const (
	DefaultStopPoll      = 2 * time.Second
	DefaultWallTime      = time.Hour
	DefaultMaxTranscript = 64 << 20
	// DefaultMaxJobLog is Config.MaxJobLog's default.
	DefaultMaxJobLog = 8 << 20
	// TokenMargin is what the run keeps of its installation token's hour after the VM's
	// wall time: the push, the pull request, the check run and the revocation.
	TokenMargin = 10 * time.Minute
	// MaxPlanBytes bounds the plan a plan run reports.
	MaxPlanBytes = 64 << 10
)

// Config is one run: what the workflow dispatch and the Actions environment say, and
// the VM to run it in.
type Config struct {
	// ServeURL is serve's base URL; AllowInsecureHTTP lets it be http:// off the
	// loopback (appclient.AllowInsecureHTTP).
	ServeURL          string
	AllowInsecureHTTP bool
	// OIDCToken fetches the job's OIDC token with audience wire.OIDCAudience
	// (appclient.OIDCTokenFromEnv in a workflow).
	OIDCToken func(ctx context.Context) (string, error)
	// WorkItem (owner/repo#N), Attempt, Nonce and Stage are the dispatch's inputs,
	// parsed where they came in (ghaction.ReadInputs).
	WorkItem wire.WorkItem
	Attempt  int
	Nonce    string
	Stage    wire.Stage

	// ServerURL is GitHub's web and git host (GITHUB_SERVER_URL); APIURL its REST API
	// (GITHUB_API_URL); RepositoryID the repository's numeric id (GITHUB_REPOSITORY_ID),
	// which the API gateway needs for /repositories/{id} paths (0: those are refused).
	ServerURL, APIURL string
	RepositoryID      int64
	// Resolve pins host names to addresses in the run's firewall and its environment
	// setup's, trusted as given (firewall.Config.Resolve): the runner host's setting
	// (BUMPER_FIREWALL_RESOLVE), for a registry mirror on a private address. Only names
	// the allowlist lets through reach them.
	Resolve map[string]string
	// Credentials are the runner host's credentials (BUMPER_CREDENTIALS,
	// docs/credentials.md); nil when it declares none. A run gets those its policy asks
	// for and its repository is granted; the firewall holds their values.
	Credentials *credentials.Host
	// CAFile, when set, is the CA bundle the firewall's gateways trust for GitHub and the
	// model APIs (default: the system's).
	CAFile string
	// Trigger is the Actions run, for the evidence.
	Trigger evidence.Trigger

	// VM is the sandbox configuration: the image's kernel, initrd, rootfs and command
	// line, vCPUs, memory, accelerator, QEMU user, snapshot and state directories. Its
	// Timeout is replaced by the repository's bounds.wall_time (default DefaultWallTime)
	// and its WorkspaceDir by the prepared workspace.
	VM sandbox.Config
	// Slots are the runner host's VM slots (BUMPER_MAX_VMS, BUMPER_VM_MEMORY_MB): the run
	// waits for one before its first VM boots and gives it back once its VMs are down.
	// Nil: no limit.
	Slots *slots.Host
	// ImageDigest and VMM describe the image and QEMU for the evidence.
	ImageDigest, VMM string
	// Environments is how the base image was built (its cache, the guest agent binary,
	// progress output): a repository's environment is that image with its packages,
	// and derived from it by its setup. A zero CacheDir (the image was given prebuilt)
	// fails the runs of repositories that declare environment:, saying why.
	Environments image.BuildConfig

	// AnthropicBase/AnthropicKey and OpenAIBase/OpenAIKey are the model APIs the firewall's
	// gateways forward to with the real key; empty turns a gateway off. The VM only ever
	// sees a sentinel key.
	AnthropicBase, AnthropicKey string
	OpenAIBase, OpenAIKey       string

	// Out is the run's output directory (the artifact): evidence, audit log, transcripts.
	Out string
	// WorkDir is where the workspace is prepared (default os.TempDir()).
	WorkDir string
	// StopPoll is how often serve is asked whether to stop (default DefaultStopPoll; a
	// /stop reaches the VM within this plus the time to kill it).
	StopPoll time.Duration
	// Mask is called with every secret the run learns, before anything could print it
	// (the Actions log masks them); may be nil.
	Mask func(secret string)
	// Phase is called when a phase starts (end false) and ends (end true), for log
	// groups; may be nil.
	Phase func(name evidence.PhaseName, end bool, p evidence.Phase)
	// Log receives the agent's and the verification's output as it runs (the job log);
	// nil discards it. Each round's full output is also kept in Out.
	Log io.Writer
	// MaxJobLog bounds what of the VM's output, all phases together, goes to Log
	// (default DefaultMaxJobLog); Log then says where the rest is.
	MaxJobLog int64
	// HTTPClient is used for GitHub's API (nil: a client with a 60 s timeout).
	HTTPClient *http.Client
	// OSVURL is the OSV API the dependencies gate asks from the host (BUMPER_OSV_URL;
	// empty: gates.DefaultOSVURL).
	OSVURL string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.StopPoll <= 0 {
		c.StopPoll = DefaultStopPoll
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Mask == nil {
		c.Mask = func(string) {}
	}
	if c.Phase == nil {
		c.Phase = func(evidence.PhaseName, bool, evidence.Phase) {}
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// validate reports every problem at once, each saying what to fix.
func (c Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.ServeURL == "" {
		bad("no serve URL: set the action's url input to serve's address")
	}
	if c.OIDCToken == nil {
		bad("no OIDC token source: the workflow needs permissions: id-token: write")
	}
	// A WorkItem made by hand, not by ParseWorkItem, is held to the same rule.
	if _, err := wire.ParseWorkItem(c.WorkItem.String()); err != nil {
		bad("%w: set the dispatch's work_item input", err)
	}
	if c.Attempt < 1 {
		bad("attempt %d: want the dispatch's attempt input, 1 or more", c.Attempt)
	}
	if c.Nonce == "" {
		bad("no nonce: the dispatch's nonce input is empty")
	}
	if !slices.Contains(wire.Stages(), c.Stage) {
		names := make([]string, 0, len(wire.Stages()))
		for _, s := range wire.Stages() {
			names = append(names, string(s))
		}
		bad("stage %q: want one of %s", c.Stage, strings.Join(names, ", "))
	}
	for _, u := range []struct{ name, v string }{{"server URL (GITHUB_SERVER_URL)", c.ServerURL}, {"API URL (GITHUB_API_URL)", c.APIURL}} {
		if p, err := url.Parse(u.v); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			bad("%s %q: want an http(s) URL", u.name, u.v)
		}
	}
	if c.Out == "" {
		bad("no output directory: set the action's out input")
	}
	if c.VM.Kernel == "" || c.VM.Rootfs == "" {
		bad("no VM image: the sandbox configuration names no kernel or root filesystem")
	}
	return errors.Join(errs...)
}
