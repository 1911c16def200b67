package main

import (
	"context"
	"fmt"
	"net"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/daemon/status"
	"github.com/ticketd/ticketd/store"
)

// defaultServeAddr matches http.addr in the repository's config.yaml.
const defaultServeAddr = "127.0.0.1:8377"

func cmdServe(e *env, args []string) error {
	fs := e.flagSet("serve")
	addr := fs.String("addr", defaultServeAddr, "listen on `HOST:PORT` (loopback only: the page has no authentication)")
	readOnly := fs.Bool("read-only", false, "no requeue or cancel buttons (also when --config sets http.read_only)")
	if _, err := e.parse(fs, args, 0, 0); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usagef("ticketctl serve --addr "+defaultServeAddr, "serve: --addr %q: want HOST:PORT", *addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usagef("ticketctl serve --addr "+defaultServeAddr,
			"serve: --addr %q is not a loopback address; the status page has no authentication (put a proxy in front to share it)", *addr)
	}
	return e.withStore(func(s *store.Store) error {
		opts := status.Options{ReadOnly: *readOnly}
		if e.cfg != nil {
			opts.ReadOnly = opts.ReadOnly || e.cfg.HTTP.ReadOnly
			opts.Hosts = e.cfg.HTTP.Hosts
			opts.MaxRounds = e.cfg.Review.MaxRounds
			cfg := *e.cfg
			pr, _ := e.pullRequests(s)
			opts.Accept = func(ctx context.Context, id int64, who string) (string, error) {
				res, err := daemon.Accept(ctx, s, cfg, id, daemon.AcceptOptions{Who: who, PullRequest: pr})
				return res.Branch, err
			}
		}
		srv, err := status.New(s, opts)
		if err != nil {
			return err
		}
		ln, err := status.Listen(*addr)
		if err != nil {
			return err
		}
		// The address goes to stderr (a note, not a result) and names the real port for :0.
		fmt.Fprintf(e.stderr, "serving the status page on http://%s/ (and /metrics, /healthz) from %s; Ctrl-C stops\n", ln.Addr(), s.Path())
		return srv.Serve(e.ctx, ln)
	})
}
