package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/pipeline/envsetup"
	"github.com/ticketd/ticketd/store"
)

// envsJSON is the stable shape of envs --json.
type envsJSON struct {
	// Latest is the latest setup of each repository on each node, from the database.
	Latest []store.Environment `json:"latest"`
	// Cached are the environments on this machine's disk (with --config), newest use first.
	Cached []envsetup.Cached `json:"cached"`
}

func cmdEnvs(e *env, args []string) error {
	if _, err := e.parse(e.flagSet("envs"), args, 0, 0); err != nil {
		return err
	}
	return e.withStore(func(s *store.Store) error {
		out := envsJSON{Cached: []envsetup.Cached{}}
		var err error
		if out.Latest, err = s.Environments(e.ctx); err != nil {
			return err
		}
		if e.cfg != nil {
			cached, err := envsetup.List(filepath.Join(e.cfg.Workspace, daemon.EnvsDir))
			if err != nil {
				return err
			}
			out.Cached = append(out.Cached, cached...)
		}
		if e.g.json {
			return e.printJSON(out)
		}
		if len(out.Latest) == 0 {
			fmt.Fprintln(e.stderr, "no repository has an environment recipe (repos.<name>.setup), or no night has set one up yet")
		} else {
			tw := e.table()
			fmt.Fprintln(tw, "REPO\tNODE\tKEY\tSTATE\tBUILT\tSETUP TOOK\tSEEN\tWHY")
			for _, v := range out.Latest {
				state := "built"
				switch {
				case !v.OK:
					state = "FAILED (repository paused)"
				case v.Cached:
					state = "cached"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Repo, v.Node, v.Key, state, fmtTime(v.BuiltAt),
					v.Took.Round(time.Second), fmtTime(v.At), clip(v.Error, 160))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, v := range out.Latest {
				if v.OK {
					continue
				}
				// Whole: what to do comes at the error's end, past the table's column.
				if len(v.Error) > 160 {
					fmt.Fprintf(e.stdout, "\nwhy the setup of %s failed:\n%s\n", v.Repo, v.Error)
				}
				if v.Output != "" {
					fmt.Fprintf(e.stdout, "\noutput of the failed recipe of %s (tail):\n%s\n", v.Repo, lastLines(v.Output, 20))
				}
			}
		}
		if e.cfg == nil {
			fmt.Fprintln(e.stderr, "note: the environments on disk need --config (the workspace)")
			return nil
		}
		fmt.Fprintf(e.stdout, "\n%d environment(s) on disk under %s (ticketctl gc prunes the unused)\n", len(out.Cached), filepath.Join(e.cfg.Workspace, daemon.EnvsDir))
		return nil
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
