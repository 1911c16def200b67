package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/store"
)

// cmdAccept publishes an escalated ticket's kept change as its fix (daemon.Accept): what the
// gate refused by rule and a human judges right. Run again after an interruption, it finishes
// the publication without repeating any of it.
func cmdAccept(e *env, args []string) error {
	fs := e.flagSet("accept")
	try := "ticketctl --config config.yaml accept 12"
	pos, err := e.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	id, err := e.parseID(pos[0])
	if err != nil {
		return err
	}
	if _, _, err := e.dbPath(); err != nil {
		return err
	}
	if e.cfg == nil {
		return usagef(try, "accept: needs --config FILE: the repositories (where the kept branch is), the output folder and the push remote")
	}
	return e.withStore(func(s *store.Store) error {
		opts := daemon.AcceptOptions{Who: e.actor(), Logger: slog.New(slog.DiscardHandler)}
		if pr, note := e.pullRequests(s); pr != nil {
			opts.PullRequest = pr
		} else if note != "" {
			fmt.Fprintf(e.stderr, "note: %s\n", note)
		}
		res, err := daemon.Accept(e.ctx, s, *e.cfg, id, opts)
		if err != nil {
			return notFoundHint(err)
		}
		if e.g.json {
			return e.printJSON(res)
		}
		if res.Resumed {
			fmt.Fprintf(e.stdout, "ticket %d: already accepted by %s; its publication is complete now\n", id, res.By)
		} else {
			fmt.Fprintf(e.stdout, "ticket %d: escalated -> done (accepted by %s): %s published as the fix %s\n", id, res.By, res.From, res.Branch)
		}
		fmt.Fprintf(e.stdout, "  branch %s, results %s\n", res.Branch, res.ResultDir)
		if res.Pushed != "" {
			fmt.Fprintf(e.stdout, "  pushed to %s\n", res.Pushed)
		}
		if res.PullRequest != "" {
			fmt.Fprintf(e.stdout, "  draft pull request %s\n", res.PullRequest)
		}
		for _, p := range res.Pending {
			fmt.Fprintf(e.stdout, "  pending: %s\n", p)
		}
		return nil
	})
}

// pullRequests is the GitHub publisher's pull request step when the configuration publishes
// to GitHub and its token is in the environment; else nil and, when GitHub output is on but
// the token is missing, a note saying the daemon will open it.
func (e *env) pullRequests(s *store.Store) (func(ctx context.Context, t store.Ticket) (string, error), string) {
	if len(e.cfg.GitHub.Repos) == 0 || !e.cfg.GitHub.Output.Enabled {
		return nil, ""
	}
	getenv := func(k string) string { v, _ := e.lookupEnv(k); return v }
	syncer, err := github.New(*e.cfg, getenv, s, slog.New(slog.DiscardHandler), github.ClientOptions{})
	if err != nil || syncer == nil || syncer.Publisher == nil {
		why := "GitHub is not reachable from here"
		if err != nil {
			why = strings.TrimSpace(err.Error())
		}
		return nil, "the draft pull request opens at the daemon's next GitHub pass: " + why
	}
	return syncer.Publisher.PullRequest, ""
}
