package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
)

// check runs `ticketd check`: every item on a line of its own, the problems on stderr too.
func check(ctx context.Context, cfg config.Config, log *slog.Logger, stdout, stderr io.Writer) int {
	items := daemon.Check(ctx, cfg, log)
	bad := 0
	for _, it := range items {
		switch {
		case it.Problem != "":
			bad++
			fmt.Fprintf(stdout, "FAIL  %s: %s\n", it.What, it.Problem)
		case it.Detail != "":
			fmt.Fprintf(stdout, "ok    %s: %s\n", it.What, it.Detail)
		default:
			fmt.Fprintf(stdout, "ok    %s\n", it.What)
		}
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "ticketd check: %d of %d item(s) would fail a night (%s)\n", bad, len(items), cfg.File)
		return exitFailed
	}
	fmt.Fprintf(stdout, "%s: a night can run\n", cfg.File)
	return exitOK
}

// watchHangup logs each SIGHUP the process gets until the returned stop is called: ticketd
// reads its config at start only, so a hangup changes nothing, and says so.
func watchHangup(log *slog.Logger) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				log.Warn("SIGHUP received: ignored (ticketd reads its config at start only; restart it to apply a new one, SIGTERM stops it)")
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		signal.Ignore(syscall.SIGHUP)
		close(done)
	}
}

// recordFailedStart records the night `ticketd run` could not start (its preflight refused),
// so ticketctl nights, the console and /metrics show it, not only the exit code.
func recordFailedStart(ctx context.Context, st *store.Store, cause error, log *slog.Logger) {
	bg := context.WithoutCancel(ctx)
	id, err := st.StartRun(bg, "run")
	if err == nil {
		err = st.EndRun(bg, id, store.OutcomeFailed, "ticketd run could not start: "+cause.Error())
	}
	if err != nil {
		log.Warn("record the failed start", "err", err)
	}
}
