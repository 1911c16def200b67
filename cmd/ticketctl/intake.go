package main

import (
	"fmt"

	"github.com/ticketd/ticketd/store"
)

func cmdIntake(e *env, args []string) error {
	if _, err := e.parse(e.flagSet("intake"), args, 0, 0); err != nil {
		return err
	}
	return e.withStore(func(s *store.Store) error {
		skips, err := s.IntakeSkips(e.ctx)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(skips)
		}
		if len(skips) == 0 {
			fmt.Fprintln(e.stderr, "intake skipped no issue file at its latest scan")
			return nil
		}
		return e.printSkips(skips)
	})
}

// printSkips lists the issue files intake skipped, and why.
func (e *env) printSkips(skips []store.IntakeSkip) error {
	fmt.Fprintln(e.stdout, "Issue files intake skipped (fix the file; the next scan takes it in):")
	tw := e.table()
	fmt.Fprintln(tw, "SOURCE\tFILE\tSEEN\tWHY")
	for _, k := range skips {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Source, k.Path, fmtTime(k.At), clip(k.Reason, 160))
	}
	return tw.Flush()
}
