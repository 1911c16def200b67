package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/daemon/status"
)

// startExtras wires what the configuration turns on beside the nights: the GitHub intake
// and output, and the status listener (served until ctx ends). An error here is a
// configuration or environment problem the operator must fix before the first night.
func startExtras(ctx context.Context, d *daemon.Daemon, log *slog.Logger) error {
	gh, err := github.New(d.Config, os.Getenv, d.Store, log, github.ClientOptions{})
	if err != nil {
		return err
	}
	d.GitHub = gh
	if d.Config.HTTP.Addr == "" {
		return nil
	}
	opts := status.Options{Logger: log.With("component", "status"), Hosts: d.Config.HTTP.Hosts, ReadOnly: d.Config.HTTP.ReadOnly,
		MaxRounds: d.Config.Review.MaxRounds, Forecast: d.Forecast}
	opts.Collectors = d.Collectors()
	if gh != nil {
		opts.Collectors = append(opts.Collectors, gh.Collectors()...)
	}
	opts.Accept = func(ctx context.Context, id int64, who string) (string, error) {
		ao := daemon.AcceptOptions{Who: who, Logger: log}
		if gh != nil && gh.Publisher != nil {
			ao.PullRequest = gh.Publisher.PullRequest
		}
		res, err := daemon.Accept(ctx, d.Store, d.Config, id, ao)
		return res.Branch, err
	}
	srv, err := status.New(d.Store, opts)
	if err != nil {
		return err
	}
	ln, err := status.Listen(d.Config.HTTP.Addr)
	if err != nil {
		return err
	}
	log.Info("status page", "url", fmt.Sprintf("http://%s/", ln.Addr()))
	go func() {
		if err := srv.Serve(ctx, ln); err != nil {
			log.Error("status listener", "addr", d.Config.HTTP.Addr, "err", err)
		}
	}()
	return nil
}
