// Package app is Aster's GitHub App, and orchestration only: the webhook endpoint that
// verifies deliveries and stores them as durable review requests, and the worker that takes
// a job through fetch (the pull request, its diffs, the base .aster.yml, the head archive),
// review (internal/review, behind the Reviewer interface: its Report is the one review
// model), plan (which comment goes inline, fingerprints, annotations) and post (one COMMENT
// review, the summary comment, the check run), each exactly once even across retries and
// crashes. What the posts say is rendered by internal/review and made safe by
// internal/safetext; GitHub is behind GitHub/RepoAPI (internal/github); the queue and
// history are internal/store.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/health"
	"github.com/asterhq/aster/internal/store"
)

// Metrics are the app's Prometheus metrics, in a registry of their own.
type Metrics struct {
	reg        *prometheus.Registry
	deliveries *prometheus.CounterVec
	reviews    *prometheus.CounterVec
	ops        opsMetrics
}

// watchBudget exports the webhook body bytes in flight and the most ever held at once.
func (m *Metrics) watchBudget(b *github.BodyBudget) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "aster_app_webhook_body_bytes_inflight",
			Help: "Webhook body bytes reserved by deliveries being read now.",
		}, func() float64 { return float64(b.InUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "aster_app_webhook_body_bytes_inflight_peak",
			Help: "The most webhook body bytes ever reserved at once; capped by the budget.",
		}, func() float64 { return float64(b.Peak()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "aster_app_webhook_body_bytes_budget",
			Help: "The budget of webhook body bytes in flight; deliveries past it get 429.",
		}, func() float64 { return float64(b.Max()) }))
}

// Registry returns the registry, for callers that add their own metrics
// (the egress relay's counters).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// NewMetrics returns the metrics with the Go runtime and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aster_app_webhook_deliveries_total",
			Help: "Webhook deliveries by event and result (accepted, ignored, duplicate, busy, rejected, failed).",
		}, []string{"event", "result"}),
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aster_app_reviews_total",
			Help: "Finished review jobs by outcome (posted, nothing_new, skipped, failed).",
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(m.deliveries, m.reviews, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.ops = newOpsMetrics(m.reg)
	return m
}

func (m *Metrics) delivery(o github.Outcome) {
	ev := o.Event
	switch ev {
	case "pull_request", "issue_comment", "pull_request_review_thread", "pull_request_review_comment", "installation", "ping":
	default:
		ev = "other" // the header is unsigned: never a label of unbounded values
	}
	m.deliveries.WithLabelValues(ev, o.Result).Inc()
}

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	WebhookSecret []byte
	Sink          github.Sink
	ReviewDrafts  bool
	// Webhook is the forge's delivery protocol (zero: GitHub's; gitea.WebhookProtocol).
	Webhook github.Protocol
	// WebhookBudget bounds the webhook body bytes in flight (nil: one of
	// config.DefaultAppWebhookInflightBytes); WebhookBodyTimeout is how long a body may take
	// to arrive (0: config.DefaultAppWebhookBodyTimeout).
	WebhookBudget      *github.BodyBudget
	WebhookBodyTimeout time.Duration
	// Ready reports whether the service can take work (the database answers).
	Ready   func(ctx context.Context) error
	Metrics *Metrics
	Logger  *slog.Logger
}

// NewHandler serves POST /webhook, GET /healthz, GET /readyz and GET /metrics. Only
// /webhook needs to be reachable from GitHub.
func NewHandler(opts HandlerOptions) (http.Handler, error) {
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.WebhookBudget == nil {
		opts.WebhookBudget = github.NewBodyBudget(config.DefaultAppWebhookInflightBytes)
	}
	wh, err := github.NewWebhookHandler(github.WebhookOptions{
		Secret: opts.WebhookSecret, Sink: opts.Sink, ReviewDrafts: opts.ReviewDrafts, Logger: opts.Logger,
		Budget: opts.WebhookBudget, BodyTimeout: opts.WebhookBodyTimeout, OnOutcome: opts.Metrics.delivery,
		Protocol: opts.Webhook,
	})
	if err != nil {
		return nil, err
	}
	opts.Metrics.watchBudget(opts.WebhookBudget)
	mux := http.NewServeMux()
	mux.Handle("/webhook", wh)
	mux.Handle("GET "+health.Route, health.Handler())
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if opts.Ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			defer cancel()
			if err := opts.Ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("not ready\n"))
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Metrics.reg, promhttp.HandlerOpts{}))
	return mux, nil
}

// ServeOptions configure Serve.
type ServeOptions struct {
	Addr string
	// Listener, when set, is used instead of listening on Addr.
	Listener      net.Listener
	WebhookSecret []byte
	Store         *store.Store
	// GitHub is the forge: AppGitHub for a GitHub App, GiteaForge for Gitea or Forgejo
	// (with Webhook set to gitea.WebhookProtocol()).
	GitHub GitHub
	// Webhook is the forge's delivery protocol (zero: GitHub's).
	Webhook      github.Protocol
	Reviewer     Reviewer
	ReviewDrafts bool
	Tests        bool
	TempDir      string
	// WebhookInflightBytes bounds the webhook body bytes being read at once (0:
	// config.DefaultAppWebhookInflightBytes); WebhookBudget, when set, replaces it (a test
	// reads its counters).
	WebhookInflightBytes int64
	WebhookBudget        *github.BodyBudget
	// WebhookBodyTimeout is how long a webhook body may take (0:
	// config.DefaultAppWebhookBodyTimeout).
	WebhookBodyTimeout time.Duration
	// Secrets are kept out of everything posted (the key, model keys; the webhook secret
	// is added).
	Secrets [][]byte
	// ShutdownGrace is how long running reviews may finish on shutdown before they are
	// cancelled (and retried by the next start).
	ShutdownGrace time.Duration
	// Ready adds a readiness check (the sandbox engine).
	Ready   func(ctx context.Context) error
	Logger  *slog.Logger
	Metrics *Metrics
	// OnListen is called with the bound address once the server accepts connections.
	OnListen func(addr net.Addr)
}

// Serve runs the App until ctx is done: the HTTP endpoint and the queue's workers. On
// shutdown it stops accepting webhooks, gives running reviews ShutdownGrace to finish, then
// cancels them; their jobs run again on the next start.
func Serve(ctx context.Context, opts ServeOptions) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	secrets := append(append([][]byte(nil), opts.Secrets...), opts.WebhookSecret)
	worker, err := NewWorker(WorkerOptions{GitHub: opts.GitHub, Jobs: opts.Store, Reviewer: opts.Reviewer,
		ReviewDrafts: opts.ReviewDrafts, Tests: opts.Tests, TempDir: opts.TempDir, Secrets: secrets, Logger: log,
		OnFinish: opts.Metrics.reviewFinished})
	if err != nil {
		return err
	}
	budget := opts.WebhookBudget
	if budget == nil {
		budget = github.NewBodyBudget(cmp.Or(opts.WebhookInflightBytes, config.DefaultAppWebhookInflightBytes))
	}
	bodyTimeout := cmp.Or(opts.WebhookBodyTimeout, config.DefaultAppWebhookBodyTimeout)
	handler, err := NewHandler(HandlerOptions{
		WebhookSecret: opts.WebhookSecret, Sink: &Sink{Store: opts.Store}, ReviewDrafts: opts.ReviewDrafts, Webhook: opts.Webhook,
		WebhookBudget: budget, WebhookBodyTimeout: bodyTimeout, Metrics: opts.Metrics, Logger: log,
		Ready: func(ctx context.Context) error {
			if err := opts.Store.Ping(ctx); err != nil {
				return err
			}
			if opts.Ready != nil {
				return opts.Ready(ctx)
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", opts.Addr); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// The webhook handler sets a shorter deadline for its body; this bounds the rest.
		ReadTimeout:    10*time.Second + bodyTimeout,
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    90 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	opts.Metrics.watchStore(opts.Store)
	handle := func(ctx context.Context, j *store.Job) error {
		opts.Metrics.jobStarted(j)
		return worker.Handle(ctx, j)
	}
	if err := opts.Store.Start(ctx, handle); err != nil {
		ln.Close()
		return err
	}
	go prune(ctx, opts.Store, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("aster app serving", "addr", ln.Addr().String(), "db", opts.Store.Kind())
	if opts.OnListen != nil {
		opts.OnListen(ln.Addr())
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	log.Info("aster app stopping", "grace", opts.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), max(opts.ShutdownGrace, time.Second))
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := opts.Store.Stop(sctx); err != nil {
		log.Warn("reviews cancelled at shutdown; they run again on the next start", "err", err)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

func prune(ctx context.Context, s *store.Store, log *slog.Logger) {
	t := time.NewTicker(6 * time.Hour)
	defer t.Stop()
	for {
		if n, err := s.Prune(ctx, config.DefaultAppRetention); err != nil && ctx.Err() == nil {
			log.Warn("prune old deliveries", "err", err)
		} else if n > 0 {
			log.Info("pruned old deliveries and runs", "rows", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
