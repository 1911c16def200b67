// Package status serves what an operator looks at while ticketd runs and the morning after:
// /healthz, /metrics (Prometheus, read from the ticket database at scrape time) and the
// console: / leads with the last night's outcome and cost and what needs a human, then
// what runs and what is done (with filters and pages: /?state=escalated&repo=app),
// /tickets/ID is one ticket's whole story, /nights the history of nights. Requeue and cancel
// are POST forms guarded by a per-process token, a same-origin check and the Host check;
// http.read_only turns them off. Everything works without JavaScript but the live refresh.
// The daemon serves it beside a night; `ticketctl serve` serves the same from the database
// alone. All of it is read through the store's API.
package status

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ticketd/ticketd/store"
)

// Server is the status listener's handler set.
type Server struct {
	store    *store.Store
	registry *prometheus.Registry
	now      func() time.Time
	log      *slog.Logger
	hosts    []string
	readOnly bool
	results  Results
	// csrf is this process's token for the action forms: a page served by this process
	// carries it, a forged form elsewhere cannot know it.
	csrf string
	// accept publishes an escalated ticket's kept change (Options.Accept); nil: not offered.
	accept AcceptFunc
	// maxRounds bounds the rounds a revise asks (Options.MaxRounds).
	maxRounds int
	// forecast is the night's cost forecast in words (Options.Forecast); nil: none.
	forecast func() string
}

// Options configure New; zero fields take the defaults.
type Options struct {
	// Collectors are registered beside the store's figures: a component with live state the
	// database does not hold (a circuit breaker, the GitHub rate limit) adds its own here.
	Collectors []prometheus.Collector
	Now        func() time.Time // default time.Now
	Logger     *slog.Logger     // default slog.Default()
	// Hosts are further Host header values Serve answers to besides the listener's own
	// address (http.hosts); any other gets 421.
	Hosts []string
	// ReadOnly hides the requeue and cancel buttons and refuses their POSTs (http.read_only).
	ReadOnly bool
	// Results reads tickets' result files (report, patches, attempt records); default
	// StoreResults over the store, with the folder recorded on the ticket (DirResults) for
	// old tickets whose files the database does not hold.
	Results Results
	// Accept publishes an escalated ticket's kept change as its fix (daemon.Accept); nil
	// hides the button (a page started without the repositories).
	Accept AcceptFunc
	// MaxRounds is review.max_rounds, which bounds the rounds the revise action asks;
	// default DefaultMaxRounds.
	MaxRounds int
	// Forecast, when set, says the night's cost forecast in words (the daemon's), shown
	// beside the night; "" shows nothing.
	Forecast func() string
}

// DefaultMaxRounds is review.max_rounds' default (daemon/config).
const DefaultMaxRounds = 3

// New returns a status server over st.
func New(st *store.Store, opts Options) (*Server, error) {
	reg := prometheus.NewRegistry()
	cs := append([]prometheus.Collector{newStoreCollector(st), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}, opts.Collectors...)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("status: register metrics: %w", err)
		}
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("status: action token: %w", err)
	}
	s := &Server{store: st, registry: reg, now: opts.Now, log: opts.Logger, hosts: opts.Hosts, readOnly: opts.ReadOnly,
		results: opts.Results, csrf: hex.EncodeToString(token), accept: opts.Accept, maxRounds: opts.MaxRounds, forecast: opts.Forecast}
	if s.maxRounds <= 0 {
		s.maxRounds = DefaultMaxRounds
	}
	if s.results == nil {
		s.results = StoreResults{Store: st, Fallback: DirResults{}}
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

// Handler routes the pages, their assets, the actions, /healthz and /metrics. Serve adds
// the Host check in front; state-changing requests also pass a same-origin check here.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorLog: slogPrinter{s.log}}))
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("GET /live", s.homeLive)
	mux.HandleFunc("GET /nights", s.nights)
	mux.HandleFunc("GET /tickets/{id}", s.ticket)
	mux.HandleFunc("GET /tickets/{id}/live", s.ticketLive)
	mux.HandleFunc("GET /tickets/{id}/files/{name...}", s.resultFile)
	mux.HandleFunc("GET /ticket/{id}", func(w http.ResponseWriter, r *http.Request) {
		// Only a ticket id: the raw value, cleaned as a path by Redirect, could lead off the
		// site (..%2F%5Cevil.example becomes /\evil.example, which a browser reads as //).
		if id, ok := s.ticketID(w, r); ok {
			http.Redirect(w, r, fmt.Sprintf("/tickets/%d", id), http.StatusMovedPermanently)
		}
	})
	mux.HandleFunc("GET /tickets/{id}/accept", s.acceptConfirm)
	mux.HandleFunc("POST /tickets/{id}/{action}", s.action)
	mux.HandleFunc("GET /bulk", s.bulkConfirm)
	mux.HandleFunc("POST /bulk", s.bulkAction)
	mux.HandleFunc("POST /needs/dismiss", s.dismiss)
	mux.HandleFunc("GET /nights/{id}", s.night)
	assets := http.FileServerFS(assetFS)
	mux.HandleFunc("GET /assets/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		assets.ServeHTTP(w, r)
	})
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.message(w, http.StatusForbidden, "Refused", "This request came from another site; ticketd acts only on forms of its own pages.", "/")
	}))
	return cop.Handler(mux)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.store.Runs(ctx, 1); err != nil {
		http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

// Serve serves on ln until ctx ends, then shuts down gracefully (5s at most). It answers
// only requests addressed to ln (see hostCheck).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Forms are at most 64 KiB: a request still sending its body after ReadTimeout, or a
	// kept-alive connection idle past IdleTimeout, holds nothing the console needs.
	srv := &http.Server{Handler: hostCheck(s.Handler(), ln.Addr(), s.hosts), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: nil}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	})
	defer stop()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Listen opens addr for Serve, with an error an operator can act on.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("status listener on %s: %w (is another ticketd or ticketctl serve running? change http.addr or --addr)", addr, err)
	}
	return ln, nil
}

type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Warn("metrics", "err", fmt.Sprint(v...)) }
