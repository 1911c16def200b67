package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/scripts/bench/caseset"
	"github.com/ticketd/ticketd/store"
)

// The night's figures over the cases with companions (caseset/companions.go, issue 35):
// how often a duplicate was worked although the ticket it duplicates was, and how many
// published fixes do not go together with the others of their repository.

// companionIssueFile is a companion's intake file: its issue, in the case's repository.
func companionIssueFile(k caseset.Case, c caseset.Companion) string {
	return issueFile(caseset.Case{Name: k.Name, Title: c.Title, Labels: c.Labels, Body: c.Body})
}

// addNightFigures sets the night's figures of the round, a night that started at started,
// into t.
func (e *env) addNightFigures(ctx context.Context, st *store.Store, cfg config.Config, root string, started time.Time, t *Totals) error {
	repos := map[string]string{}
	for name, r := range cfg.Repos {
		repos[name] = r.Path
	}
	var err error
	t.DuplicatesWorkedTwice, t.PublishedConflicts, err = e.nightFigures(ctx, st, repos, root)
	if err != nil {
		return err
	}
	t.Shape, err = nightShape(ctx, st, started, cfg.Night.Workers)
	return err
}

// nightFigures reads the round's tickets back and counts, over the cases with companions,
// the duplicates worked twice and the published fixes that conflict.
func (e *env) nightFigures(ctx context.Context, st *store.Store, repos map[string]string, root string) (twice, conflicts int, err error) {
	tickets, err := st.List(ctx, store.Filter{})
	if err != nil {
		return 0, 0, err
	}
	for _, k := range e.cases {
		if len(k.Companions) == 0 {
			continue
		}
		var mine []store.Summary
		for _, t := range tickets {
			if t.Repo == k.Name {
				mine = append(mine, t)
			}
		}
		twice += workedTwice(k, mine)
		n, err := e.conflicting(ctx, k, mine, repos[k.Name], filepath.Join(root, "combined", k.Name))
		if err != nil {
			return 0, 0, fmt.Errorf("case %q: %w", k.Name, err)
		}
		conflicts += n
	}
	return twice, conflicts, nil
}

// workedTwice is how many of the tickets reporting the case's own failure (the case's and
// its duplicates') were worked beyond the first: claimed, or calling a model.
func workedTwice(k caseset.Case, tickets []store.Summary) int {
	titles := []string{k.Title}
	for _, c := range k.Companions {
		if c.Kind == caseset.CompanionDuplicate {
			titles = append(titles, c.Title)
		}
	}
	if len(titles) == 1 {
		return 0
	}
	worked := 0
	for _, t := range tickets {
		if slices.Contains(titles, t.Title) && (t.Attempts > 0 || t.ModelCalls > 0) {
			worked++
		}
	}
	return max(worked-1, 0)
}

// conflicting stacks the distinct branches of the repository's done tickets, in ticket
// order, on a fresh clone at the base: each that does not apply on top of the earlier
// ones conflicts; when they all apply, the repository's tests and the case's hidden tests
// must pass with all of them, or the last one counts as conflicting.
func (e *env) conflicting(ctx context.Context, k caseset.Case, tickets []store.Summary, repo, dir string) (int, error) {
	var branches []string
	for _, t := range tickets {
		if t.State == store.StateDone && t.Branch != "" && !slices.Contains(branches, t.Branch) {
			branches = append(branches, t.Branch)
		}
	}
	if len(branches) < 2 {
		return 0, nil
	}
	if out, err := gitRun(ctx, "", "clone", "-q", "--no-hardlinks", repo, dir); err != nil {
		return 0, fmt.Errorf("clone %s: %w: %s", repo, err, out)
	}
	conflicts, stacked := 0, 0
	for _, b := range branches {
		diff, err := gitRun(ctx, repo, "diff", "--binary", "HEAD..."+b, "--")
		if err != nil {
			return 0, fmt.Errorf("diff of %s: %w", b, err)
		}
		apply := exec.CommandContext(ctx, "git", "apply", "--index", "-")
		apply.Dir, apply.Stdin, apply.Env = dir, strings.NewReader(diff), gitEnv()
		if out, err := apply.CombinedOutput(); err != nil {
			fmt.Fprintf(e.stderr, "case %s: published branch %s does not apply on top of the others: %s\n", k.Name, b, strings.TrimSpace(string(out)))
			conflicts++
			continue
		}
		stacked++
	}
	if stacked < 2 {
		return conflicts, nil
	}
	visible := exec.CommandContext(ctx, e.pytest[0], append(append([]string{}, e.pytest[1:]...), "-q", "-p", "no:cacheprovider")...)
	visible.Dir = dir
	out, verr := visible.CombinedOutput()
	passed, _, jerr := k.Judge(ctx, dir, e.pytest)
	if verr != nil || !passed || jerr != nil {
		fmt.Fprintf(e.stderr, "case %s: the published branches fail together (tests: %v; hidden tests passed %v %v)\n%s\n", k.Name, verr, passed, jerr, lastLinesOf(string(out), 15))
		conflicts++
	}
	return conflicts, nil
}

func gitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
}

// gitRun runs git in dir ("" for the current folder) and returns its output.
func gitRun(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv()
	out, err := cmd.Output()
	return string(out), err
}

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
