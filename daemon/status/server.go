// Package status serves what an operator looks at while ticketd runs: /healthz, /metrics
// (Prometheus, read from the ticket database at scrape time) and a status page at / with
// counts by state, running tickets and their step, tonight's results and, per ticket, a
// chart of tokens per model call. The daemon serves it beside a night; `ticketctl serve`
// serves the same from the database alone.
package status

import (
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

	"github.com/ticketd/ticketd/store"
)

// Server is the status listener's handler set.
type Server struct {
	store    *store.Store
	registry *prometheus.Registry
	now      func() time.Time
	log      *slog.Logger
	hosts    []string
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
}

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
	s := &Server{store: st, registry: reg, now: opts.Now, log: opts.Logger, hosts: opts.Hosts}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

// Handler routes /healthz, /metrics, / and /live (the page's refreshed part).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorLog: slogPrinter{s.log}}))
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /live", s.live)
	mux.HandleFunc("GET /page.js", s.script)
	return mux
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
	srv := &http.Server{Handler: hostCheck(s.Handler(), ln.Addr(), s.hosts), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
		ErrorLog: nil}
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
