// Package gateway holds the reverse proxies the VM reaches on the firewall's listener in
// plain HTTP: /git/ (the git host), /api/github/ (the GitHub API), /anthropic/ and
// /openai/ (model APIs). Each strips whatever credential the client sent and adds the
// real one for its own upstream only; the VM never holds a real secret.
//
// On every route, before anything is forwarded, a protocol upgrade (WebSocket, h2c) is
// refused with 400, and a request that asks for another method by header
// (X-HTTP-Method-Override and the like) or by a _method query parameter with 403.
//
// The git and API gateways serve the run's repository only (Config.Repository, which
// they require): another repository, a stranger's fork included, is refused.
//
// The GitHub API gateway is off unless the repository opts in (Config.APIAllow), and
// read-only even then: the agent's only write to GitHub is its push through the git
// gateway. Whatever the rules say, it refuses every method but GET and HEAD and never
// serves text strangers or issue authors can write (comments, reviews, timelines, events,
// discussions, gists, issues and pull requests themselves, sub-issues, search, check run
// annotations, profiles), a fork's code (anything naming refs/pull/…, a listing of refs
// that includes them, owner:branch in a compare, lists of forks), security alerts and
// secrets, nor the host's own surfaces (Actions, hooks, GraphQL, the installation); the
// list, with the reason for each entry, is apiRefusals in hostonly.go. Outside the run's
// repository it forwards only GitHub's own metadata (repository.go). A path segment
// holding anything but letters, digits and - . _ ~ : is refused with 400 (file names
// below /contents/ may hold any visible character and spaces, never ';', control,
// invisible or format characters), and so is "%25" on every gateway path.
//
// The model gateways forward only the endpoints the harnesses use (POST /v1/messages and
// /v1/messages/count_tokens and GET /v1/models[/{id}] to Anthropic; POST /v1/responses
// and /v1/chat/completions and GET /v1/models[/{id}] to OpenAI), refuse every call once
// the run's budget is spent, and read each request body (at most MaxModelBody) to learn
// the model and output cap. They refuse (403) a call that declares a tool the harness
// does not run itself, or names one in tool_choice (web search and fetch, code
// execution, MCP, file search, image generation, which the provider runs and which would
// fetch URLs the allowlist never sees; computer use, which no harness uses), content
// the provider would fetch from a URL (an image, document, file or audio source given as
// an http(s) URL, anywhere in the messages, input, system or tool results; base64 and
// data: URLs pass), a service tier dearer than the price table
// (priority, scale) or Anthropic's 1M-token context beta (long-context rates). A call that generates tokens holds its worst case
// (meter.WorstCase) against the budget while in flight (meter.Reserve), and is refused
// in the API's own budget error when that does not fit in what is left; it is then
// charged what its response reports or, when the response reports no usage (a stream
// cut off, an error with a body, a body without usage, a client that hung up), its worst
// case; a Chat Completions stream is made to report usage (stream_options.include_usage).
package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/meter"
	"github.com/bumperdev/bumper/internal/denied"
	"github.com/bumperdev/bumper/internal/revision"
)

// Route prefixes on the listener.
const (
	PrefixGit       = "/git/"
	PrefixGitHubAPI = "/api/github/"
	PrefixAnthropic = "/anthropic/"
	PrefixOpenAI    = "/openai/"
)

// Config is what the gateways need. A gateway whose base URL is empty is off, and its
// prefix answers 404 saying so.
type Config struct {
	GitBase       string // e.g. https://github.com
	GitHubAPIBase string // e.g. https://api.github.com
	AnthropicBase string // e.g. https://api.anthropic.com
	OpenAIBase    string // e.g. https://api.openai.com

	Token string // GitHub installation token (git and API)

	// Repository is the run's repository, "owner/name", compared case-insensitively as
	// GitHub does: the only repository the git and API gateways serve. Required when
	// either of them is on, since the token reads every public repository, forks
	// included, and the agent would read any of them.
	Repository string
	// RepositoryID is the run's repository's numeric id, when known: the API gateway
	// serves /repositories/{id}/… for that id only, and none of them when it is 0.
	RepositoryID int64
	AnthropicKey string
	OpenAIKey    string

	// APIAllow lists the "METHOD /path" rules of the GitHub API calls the agent may make
	// (a path segment "*" matches one segment, a final "**" matches the rest; method "*"
	// any method). Empty: the agent has no GitHub API, every call is refused. The
	// refusal table (hostonly.go) wins over the rules: only GET and HEAD are ever
	// forwarded, and never to comments and the other paths listed there, so "* /**"
	// means "every read the table allows". A GET rule also allows HEAD.
	APIAllow []string
	// PushRef is the only ref receive-pack may update (refs/heads/bumper/<issue>-<n>:
	// the run's work branch). Empty: every push is refused.
	PushRef string
	// PushFrom, when set, is the only old value an update of PushRef may carry (40
	// hexadecimal digits): a fix run's branch is the pull request's, and its push only
	// moves it on from the head the run started at. A create, a delete, or an update
	// from any other commit (the branch moved, a push built on something else) is
	// refused before it reaches the git host; GitHub applies the update only while the
	// branch is still at PushFrom. That the new commit descends from it is the runner's
	// check (workspace.Result), made on the objects before it pushes.
	PushFrom string
	// PushClosed starts the gateway with pushes closed (SetPushOpen opens them): the
	// runner pushes the verified result itself, after the VM's last command, so the
	// agent never pushes at all, not even its own branch.
	PushClosed bool
	// CAFile, when set, replaces the system roots for upstream TLS (tests, private hosts).
	CAFile string
	// Dependencies are other repositories, "owner/name" (compared case-insensitively),
	// the git gateway serves besides Repository, for fetching only (upload-pack), with
	// DependencyToken: a push to one is refused before the git host is asked. The
	// run's token is never sent for them, nor theirs for the run's repository.
	Dependencies []string
	// DependencyToken is an installation token of contents: read on exactly
	// Dependencies; required when they are set.
	DependencyToken string

	Meter *meter.Meter // meters /anthropic/ and /openai/; nil: no metering, no cap
	Audit *audit.Log
}

// Gateway serves the gateway routes. It implements http.Handler.
type Gateway struct {
	cfg       Config
	git       *upstream
	api       *upstream
	anthropic *upstream
	openai    *upstream
	apiRules  []apiRule
	transport *http.Transport
	// owner and repo are Config.Repository's halves, lower-cased; repoID is
	// Config.RepositoryID in decimal, "" when not known.
	owner, repo, repoID string
	// deps are Config.Dependencies, lower-cased owner/name to the name as configured.
	deps map[string]string
	// pushOpen says receive-pack may be served now (Config.PushClosed, SetPushOpen).
	pushOpen atomic.Bool
}

// SetPushOpen opens or closes pushes through the git gateway. A push already past its
// check goes on; the next is judged by the new state.
func (g *Gateway) SetPushOpen(open bool) { g.pushOpen.Store(open) }

type upstream struct {
	name string
	base *url.URL
}

// New checks cfg and builds the gateways.
func New(cfg Config) (*Gateway, error) {
	if cfg.Audit == nil {
		return nil, errors.New("failed to create gateways: an audit log is required")
	}
	g := &Gateway{cfg: cfg}
	g.pushOpen.Store(!cfg.PushClosed)
	var err error
	if g.git, err = parseBase("git", cfg.GitBase, cfg.Token, "token"); err != nil {
		return nil, err
	}
	if g.api, err = parseBase("github-api", cfg.GitHubAPIBase, cfg.Token, "token"); err != nil {
		return nil, err
	}
	if g.anthropic, err = parseBase("anthropic", cfg.AnthropicBase, cfg.AnthropicKey, "anthropic key"); err != nil {
		return nil, err
	}
	if g.openai, err = parseBase("openai", cfg.OpenAIBase, cfg.OpenAIKey, "openai key"); err != nil {
		return nil, err
	}
	if g.git != nil || g.api != nil {
		if err := g.setRepository(cfg.Repository, cfg.RepositoryID); err != nil {
			return nil, err
		}
	}
	if err := g.setDependencies(cfg.Dependencies, cfg.DependencyToken); err != nil {
		return nil, err
	}
	for _, r := range cfg.APIAllow {
		rule, err := parseAPIRule(r)
		if err != nil {
			return nil, err
		}
		g.apiRules = append(g.apiRules, rule)
	}
	if cfg.PushRef != "" && !runBranch.MatchString(cfg.PushRef) {
		return nil, fmt.Errorf("failed to create gateways: push ref %q is not a run branch: use refs/heads/bumper/<issue>-<attempt>, e.g. refs/heads/bumper/12-1", cfg.PushRef)
	}
	if cfg.PushFrom != "" && (cfg.PushRef == "" || !revision.IsCommitID(cfg.PushFrom)) {
		return nil, fmt.Errorf("failed to create gateways: push_from %q must be a full commit id (40 lower-case hexadecimal digits) and needs push_ref", cfg.PushFrom)
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("failed to read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("failed to read CA file %s: no PEM certificate in it", cfg.CAFile)
		}
		tlsConf.RootCAs = pool
	}
	g.transport = &http.Transport{
		TLSClientConfig:       tlsConf,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 10 * time.Minute, // model calls think for a long time
		Proxy:                 nil,              // never through another proxy: the token goes direct
	}
	return g, nil
}

// setRepository checks and keeps the run's repository, which a git or API gateway needs.
func (g *Gateway) setRepository(repo string, id int64) error {
	which := "github-api"
	if g.api == nil {
		which = "git"
	}
	if repo == "" {
		return fmt.Errorf("failed to configure gateway %s: no repository: set the run's repository (gateways.repository: owner/name); without it the gateway would serve every repository the token can read, any public one and its forks included", which)
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !validName(owner) || !validName(name) || strings.HasSuffix(strings.ToLower(name), ".git") {
		return fmt.Errorf("failed to configure gateway %s: repository %q is not owner/name", which, repo)
	}
	if id < 0 {
		return fmt.Errorf("failed to configure gateway %s: repository id %d is negative", which, id)
	}
	g.owner, g.repo = strings.ToLower(owner), strings.ToLower(name)
	if id > 0 {
		g.repoID = strconv.FormatInt(id, 10)
	}
	return nil
}

// isLoopback says whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// runBranch is the only kind of ref a run may push (DESIGN: refs/heads/bumper/<issue>-<attempt>):
// a configuration naming any other branch, main included, is refused.
var runBranch = regexp.MustCompile(`^refs/heads/bumper/[1-9][0-9]*-[1-9][0-9]*$`)

func parseBase(name, base, secret, secretName string) (*upstream, error) {
	if base == "" {
		return nil, nil
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return nil, fmt.Errorf("failed to configure gateway %s: base URL %q must be http(s)://host[/path] without user or query", name, base)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		// The gateway adds the real secret to every request it forwards.
		return nil, fmt.Errorf("failed to configure gateway %s: base URL %q would send the %s in clear: use https (plain http only to a loopback address, such as the GitHub emulator)", name, base, secretName)
	}
	if secret == "" {
		return nil, fmt.Errorf("failed to configure gateway %s: a base URL is set but no %s", name, secretName)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &upstream{name: name, base: u}, nil
}

// Close releases idle upstream connections.
func (g *Gateway) Close() { g.transport.CloseIdleConnections() }

// ServeHTTP routes a request to its gateway.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := g.cfg.Audit.Err(); err != nil {
		// Fail closed: a call that cannot be recorded is not made.
		w.Header().Set("X-Bumper-Firewall", "refused")
		w.Header().Set(denied.Header, string(denied.Unavailable))
		http.Error(w, "bumper firewall: 503 unavailable: the firewall's audit log is failing; nothing is forwarded", http.StatusServiceUnavailable)
		return
	}
	path := r.URL.EscapedPath()
	if msg := checkPath(path); msg != "" {
		g.refuse(w, r, "gateway", http.StatusBadRequest, msg)
		return
	}
	if isUpgrade(r.Header) {
		// ReverseProxy would splice an upgraded connection through with the real
		// credential attached, and nothing after the 101 is seen: no rule, no meter.
		g.refuseAs(w, r, "gateway", denied.Method, http.StatusBadRequest, "protocol upgrade (WebSocket, h2c) refused: the gateways serve plain HTTP requests only")
		return
	}
	if name := methodOverride(r); name != "" {
		// The rules judge the method as sent; an upstream that honours an override
		// would run another one (a GET that deletes).
		g.refuseAs(w, r, "gateway", denied.Method, http.StatusForbidden, fmt.Sprintf("method override (%s) refused [method-override]: the method sent is the one judged and forwarded", name))
		return
	}
	switch {
	case strings.HasPrefix(path, PrefixGit):
		g.serveGit(w, r, strings.TrimPrefix(path, "/git"))
	case strings.HasPrefix(path, PrefixGitHubAPI):
		g.serveAPI(w, r, strings.TrimPrefix(path, "/api/github"))
	case strings.HasPrefix(path, PrefixAnthropic):
		g.serveModel(w, r, g.anthropic, "anthropic", strings.TrimPrefix(path, "/anthropic"))
	case strings.HasPrefix(path, PrefixOpenAI):
		g.serveModel(w, r, g.openai, "openai", strings.TrimPrefix(path, "/openai"))
	default:
		g.refuse(w, r, "gateway", http.StatusNotFound, "no gateway serves this path (gateways: /git/, /api/github/, /anthropic/, /openai/)")
	}
}

// isUpgrade says whether a request asks to switch protocols: an Upgrade or
// HTTP2-Settings header, or "upgrade" among the Connection tokens, in any case.
func isUpgrade(h http.Header) bool {
	if len(h.Values("Upgrade")) > 0 || len(h.Values("Http2-Settings")) > 0 {
		return true
	}
	for _, v := range h.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// checkPath refuses paths whose meaning could change between here and the upstream:
// dot segments, encoded slashes, dots or percent signs, backslashes, empty segments.
func checkPath(p string) string {
	lower := strings.ToLower(p)
	switch {
	case !strings.HasPrefix(p, "/"):
		return "path must start with /"
	case strings.Contains(lower, "%2f"), strings.Contains(lower, "%5c"), strings.Contains(lower, "%2e"), strings.Contains(p, "\\"):
		return "encoded '/', '\\' or '.' in the path is refused"
	case strings.Contains(p, "//"):
		return "empty path segment is refused"
	case strings.Contains(lower, "%25"):
		// An encoded '%': whatever decodes the path a second time reads another one.
		return "encoded '%' (%25, an encoding meant to be decoded twice) in the path is refused"
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return "'.' and '..' path segments are refused"
		}
	}
	return ""
}
