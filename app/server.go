package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/bumperdev/bumper/internal/ghretry"

	"github.com/gregjones/httpcache"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ghclient"
	"github.com/bumperdev/bumper/app/handler"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/metrics"
	"github.com/bumperdev/bumper/app/runnerapi"
	"github.com/bumperdev/bumper/app/workitem"
)

// Options are what tests and benchmarks change beyond the configuration.
type Options struct {
	// Transport carries every request to GitHub (below the cache); nil: the default.
	Transport http.RoundTripper
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// OnHandled, when set, learns how long each webhook's handling took (from the
	// worker picking it up to the handler's return), for figures.
	OnHandled func(event string, elapsed time.Duration)
	// RunTokenTTL replaces runnerapi.RunTokenTTL (tests of runs that outlive a
	// token); 0: the default.
	RunTokenTTL time.Duration
	// Fault, for tests only, makes the handling end at a named point of the flow as if
	// serve had been killed there (see workitem.Options.Fault).
	Fault func(workitem.FaultPoint) error
}

// maxWebhookBody bounds a webhook delivery's body: GitHub caps its payloads at 25 MB.
const maxWebhookBody = 26 << 20

// Server is `bumper serve`: the webhook route, the runner endpoints, /healthz, /readyz
// and /metrics.
type Server struct {
	cfg     Config
	svc     *workitem.Service
	sched   *ackScheduler
	handler http.Handler
	// metricsHandler serves /metrics, /healthz and /readyz on
	// server.metrics_address when that is set.
	metricsHandler http.Handler
	ready          *readiness
	// redeliver asks GitHub again for the failed webhook deliveries.
	redeliver *redeliverer
	// rebuildWait is the first wait after a start-up rebuild GitHub failed; 0:
	// rebuildFirstWait (tests shorten it).
	rebuildWait time.Duration
	// pause is the kill switch as the work items read it (SetPause).
	pause *atomic.Pointer[workitem.PauseState]
}

// SetPause turns the kill switch (bumper.paused, bumper.pause) on or off at once, as
// a reload of the configuration does; turned off, every item a pause held is
// dispatched again (without a new approval unless it lapsed). It returns how many.
func (s *Server) SetPause(ctx context.Context, p workitem.PauseState) (int, error) {
	prev := s.pause.Swap(&p)
	log := zerolog.Ctx(ctx).Info().Bool(logkey.Paused, p.Paused).Bool(logkey.PauseFinish, p.Finish)
	if p.Paused || prev == nil || !prev.Paused {
		log.Msg("pause switch set")
		return 0, nil
	}
	n, err := s.svc.Resume(ctx)
	log.Int(logkey.Resumed, n).Msg("unpaused; the held work items were dispatched")
	return n, err
}

// New wires the App: client creator, ledger index, domain service, handlers, token
// exchange. It contacts the OIDC issuer (discovery), nothing else.
func New(ctx context.Context, cfg Config, opts Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	clientOpts := []githubapp.ClientOption{
		githubapp.WithClientUserAgent("bumper"),
		githubapp.WithClientTimeout(30 * time.Second),
		// Always revalidate: every read is a conditional request, and 304s do not
		// count against the rate limit.
		githubapp.WithClientCaching(true, func() httpcache.Cache { return httpcache.NewMemoryCache() }),
		githubapp.WithClientMiddleware(githubapp.ClientLogging(zerolog.DebugLevel)),
	}
	idx, err := ledger.NewIndex()
	if err != nil {
		return nil, err
	}
	met := metrics.New(func() map[string]int {
		out := map[string]int{}
		for _, st := range ledger.States() {
			out[string(st)] = len(idx.ByState(st))
		}
		return out
	})
	// Below go-githubapp's cache and token middleware: each request that reaches
	// GitHub counts once, a repetition too. Above the metrics, ghretry waits out GitHub's
	// 5xx and secondary rate limits for every client serve makes.
	clientOpts = append(clientOpts, githubapp.WithTransport(ghretry.New(met.Transport(opts.Transport))))
	cc, err := githubapp.NewDefaultCachingClientCreator(cfg.GitHub, clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("failed to create the GitHub client creator: %w", err)
	}
	key, err := cfg.RunTokenKeyBytes()
	if err != nil {
		return nil, err
	}
	previous, err := cfg.PreviousKeyBytes()
	if err != nil {
		return nil, err
	}
	runTokens, err := runnerapi.NewRunTokens(key, opts.Now, previous...)
	if err != nil {
		return nil, err
	}
	runTokens.WithTTL(opts.RunTokenTTL)
	sealer, err := ledger.NewSealer(key, previous...)
	if err != nil {
		return nil, err
	}
	conn := ghclient.NewConnector(cc)
	pause := &atomic.Pointer[workitem.PauseState]{}
	initial := cfg.Bumper.PauseState()
	pause.Store(&initial)
	svc, err := workitem.New(workitem.Options{Index: idx, Connector: conn, Workflow: cfg.Bumper.Workflow,
		TriggerLabel: cfg.Bumper.TriggerLabel, TokenPermissions: cfg.Bumper.TokenPermissions,
		RunTokens: runTokens, Sealer: sealer, ApproveWindow: cfg.Bumper.ApproveWindow, Now: opts.Now,
		Observer: met, Fault: opts.Fault, AppID: cfg.GitHub.App.IntegrationID,
		Limits: cfg.Bumper.Limits.workitemLimits(), Spend: ghclient.NewSpendStore(conn, cfg.Bumper.Limits.LedgerRepository),
		Pause: func() workitem.PauseState { return *pause.Load() }})
	if err != nil {
		return nil, err
	}
	verifier, err := runnerapi.NewVerifier(ctx, cfg.Bumper.OIDCIssuer)
	if err != nil {
		return nil, err
	}
	attester, err := cfg.attester()
	if err != nil {
		return nil, err
	}
	sched := newAckScheduler(cfg.Server.QueueSize, cfg.Server.Workers, handledBy(met, opts.OnHandled),
		func(ctx context.Context, d githubapp.Dispatch, err error) {
			zerolog.Ctx(ctx).Error().Err(err).Str(githubapp.LogKeyEventType, d.EventType).
				Str(githubapp.LogKeyDeliveryID, d.DeliveryID).Msg("failed to handle a webhook; answered 500, so the redelivery sweep has GitHub send it again")
		})
	handlers := handler.All(handler.Base{Service: svc, Connector: conn, DispatchGrace: cfg.Server.DispatchGrace})
	hooks := githubapp.NewEventDispatcher(handlers, cfg.GitHub.App.WebhookSecret,
		append(webhookOutcomes(met, knownEvents(handlers)), githubapp.WithScheduler(sched))...)

	ready := newReadiness()
	health := func(mux *http.ServeMux) {
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "ok %d work items\n", idx.Len())
		})
		mux.HandleFunc("GET /readyz", ready.serveReadyz)
	}
	mux := http.NewServeMux()
	// The signature can only be checked over the whole body, which go-githubapp reads
	// into memory first: anyone can send one, so it is bounded by GitHub's own cap.
	mux.Handle("POST "+cfg.Server.WebhookPath, http.MaxBytesHandler(hooks, maxWebhookBody))
	api := runnerapi.NewHandler(verifier, runTokens, svc).WithObserver(met)
	if attester != nil {
		api.WithAttester(attester)
	}
	api.Register(mux)
	health(mux)
	srv := &Server{cfg: cfg, svc: svc, sched: sched, ready: ready, pause: pause,
		redeliver: newRedeliverer(cc, cfg.Server.RedeliverWindow, opts.Now)}
	if cfg.Server.MetricsAddress == "" {
		mux.Handle("GET /metrics", met.Handler())
	} else {
		// The webhook listener faces GitHub (the internet); the metrics one stays
		// inside, for Prometheus and the probes.
		mmux := http.NewServeMux()
		mmux.Handle("GET /metrics", met.Handler())
		health(mmux)
		srv.metricsHandler = withLogger(zerolog.Ctx(ctx), mmux)
	}
	srv.handler = withLogger(zerolog.Ctx(ctx), mux)
	return srv, nil
}

// serveMetrics listens on server.metrics_address, when set, until the returned function
// is called.
func (s *Server) serveMetrics(ctx context.Context) (func(), error) {
	if s.metricsHandler == nil {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", s.cfg.Server.MetricsAddress)
	if err != nil {
		return nil, fmt.Errorf("failed to listen on server.metrics_address %s: %w", s.cfg.Server.MetricsAddress, err)
	}
	srv := &http.Server{Handler: s.metricsHandler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			zerolog.Ctx(ctx).Error().Err(err).Msg("failed to serve metrics")
		}
	}()
	zerolog.Ctx(ctx).Info().Str(logkey.Address, ln.Addr().String()).Msg("serving metrics and probes")
	return func() {
		// A scrape is short: no need to wait for one in flight.
		_ = srv.Close()
		<-done
	}, nil
}

// withLogger gives every request the server's logger, so handlers log through
// zerolog.Ctx with the webhook's keys added by go-githubapp.
func withLogger(log *zerolog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(log.WithContext(r.Context())))
	})
}

// Handler is the server's HTTP surface.
func (s *Server) Handler() http.Handler { return s.handler }

// Rebuild fills the ledger index from GitHub; /readyz answers 200 once one succeeded.
func (s *Server) Rebuild(ctx context.Context) (workitem.RebuildStats, error) {
	st, err := s.svc.Rebuild(ctx)
	s.ready.rebuilt(err)
	return st, err
}

// Redrive re-handles once the events whose dispatch met a guard ref without its record
// for longer than server.dispatch_grace (Run does it every quarter of the grace); it
// says how many.
func (s *Server) Redrive(ctx context.Context) (int, error) { return s.svc.Redrive(ctx) }

// redriveLoop runs Redrive until ctx ends.
func (s *Server) redriveLoop(ctx context.Context) {
	t := time.NewTicker(min(max(s.cfg.Server.DispatchGrace/4, time.Second), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.Redrive(ctx); err != nil {
			zerolog.Ctx(ctx).Error().Err(err).Msg("failed to re-drive a dispatch")
		}
	}
}

// Drain waits until every accepted webhook was handled.
func (s *Server) Drain(ctx context.Context) error { return s.sched.wait(ctx) }

// Run rebuilds the index, serves until ctx ends, then shuts down gracefully: no new
// requests, and the accepted webhooks are handled before it returns. Once listening, it
// asks GitHub again for the failed webhook deliveries, then every
// server.redeliver_interval.
func (s *Server) Run(ctx context.Context) error {
	log := zerolog.Ctx(ctx)
	// The metrics listener comes first: a probe sees serve alive and not yet ready
	// while it rebuilds.
	stopMetrics, err := s.serveMetrics(ctx)
	if err != nil {
		return err
	}
	defer stopMetrics()
	st, err := s.rebuildAtStart(ctx)
	if err != nil {
		return fmt.Errorf("failed to rebuild the ledger from GitHub: %w", err)
	}
	log.Info().Int(logkey.Items, st.Items).Int(logkey.Repositories, st.Repositories).Int(logkey.Untrusted, st.Untrusted).Msg("ledger rebuilt")
	ln, err := net.Listen("tcp", s.cfg.Server.Address)
	if err != nil {
		return fmt.Errorf("failed to listen on %s: %w", s.cfg.Server.Address, err)
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info().Str(logkey.Address, ln.Addr().String()).Msg("bumper serve is listening")
	// The sweep starts once serve listens: a redelivery must find it there.
	rctx, stopRedeliver := context.WithCancel(ctx)
	redelivered := make(chan struct{})
	go func() {
		defer close(redelivered)
		if s.cfg.Server.RedeliverInterval > 0 {
			s.redeliver.run(rctx, s.cfg.Server.RedeliverInterval)
		}
	}()
	redriven := make(chan struct{})
	go func() {
		defer close(redriven)
		s.redriveLoop(rctx)
	}()
	defer func() { stopRedeliver(); <-redelivered; <-redriven }()
	select {
	case err := <-errc:
		return fmt.Errorf("failed to serve: %w", err)
	case <-ctx.Done():
	}
	s.ready.stopping()
	stopRedeliver()
	<-redelivered
	<-redriven
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Server.ShutdownTimeout)
	defer cancel()
	log.Info().Msg("shutting down: finishing the accepted webhooks")
	err = srv.Shutdown(sctx)
	if dErr := s.Drain(sctx); dErr != nil {
		err = errors.Join(err, fmt.Errorf("failed to finish the accepted webhooks: %w", dErr))
	}
	return err
}
