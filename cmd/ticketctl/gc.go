package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/envsetup"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// gcJSON is the stable shape of gc --json.
type gcJSON struct {
	Pruned int `json:"pruned"` // tickets whose bulky columns were emptied
	// BaselinesPruned counts kept baselines (checks results at a base commit) no night
	// used within the age; a night that meets their base again recomputes them.
	BaselinesPruned int `json:"baselines_pruned"`
	// BranchesDeleted are the kept-attempt branches (and with --branches the fix branches)
	// of tickets finished before the age; ResultsDeleted the results/<id>/ folders.
	BranchesDeleted []string `json:"branches_deleted"`
	ResultsDeleted  []string `json:"results_deleted"`
	// FilesSkipped says why branches and results/ were not looked at ("" when they were).
	FilesSkipped string `json:"files_skipped,omitempty"`
	// EnvironmentsDeleted are the environment folders (repos.<name>.setup) no night used
	// within the age, each repository's latest kept.
	EnvironmentsDeleted []string `json:"environments_deleted"`
	OlderThanS          float64  `json:"older_than_s"`
}

func cmdGC(e *env, args []string) error {
	fs := e.flagSet("gc")
	olderThan := fs.String("older-than", "", "prune tickets finished, and baselines unused, more than `AGE` ago (720h or 30d); required")
	branches := fs.Bool("branches", false, "also delete the fix branches of done tickets (after they are merged or pushed)")
	if _, err := e.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *olderThan == "" {
		return usagef("ticketctl gc --older-than 720h", "gc: --older-than is required (it says how much recent detail to keep)")
	}
	age, err := parseDuration(*olderThan)
	if err != nil {
		return usagef("ticketctl gc --older-than 720h", "gc: --older-than: %v", err)
	}
	if age < time.Hour {
		return usagef("ticketctl gc --older-than 720h", "gc: --older-than %s would prune tickets that just finished; want at least 1h", *olderThan)
	}
	return e.withStore(func(s *store.Store) error {
		out := gcJSON{OlderThanS: age.Seconds(), BranchesDeleted: []string{}, ResultsDeleted: []string{}, EnvironmentsDeleted: []string{}}
		if e.cfg == nil {
			out.FilesSkipped = "branches and results/ need the repositories and the output folder: pass --config FILE"
		} else if err := e.gcFiles(s, age, *branches, &out); err != nil {
			return err
		}
		n, err := s.GC(e.ctx, age)
		if err != nil {
			return err
		}
		nb, err := s.PruneBaselines(e.ctx, age)
		if err != nil {
			return err
		}
		out.Pruned, out.BaselinesPruned = n, nb
		if e.g.json {
			return e.printJSON(out)
		}
		printGC(e.stdout, e.stderr, out, *olderThan, *branches)
		return nil
	})
}

// printGC says what gc pruned and deleted, and what it kept and why.
func printGC(stdout, stderr io.Writer, out gcJSON, olderThan string, branches bool) {
	fmt.Fprintf(stdout, "pruned %d ticket(s) finished more than %s ago (body, triage, summary and tool payloads; events and costs kept)\n", out.Pruned, olderThan)
	fmt.Fprintf(stdout, "deleted %d baseline(s) no night used in %s (recomputed if a night meets their base commit again)\n", out.BaselinesPruned, olderThan)
	if out.FilesSkipped != "" {
		fmt.Fprintf(stderr, "note: %s\n", out.FilesSkipped)
		return
	}
	what := "kept-attempt branch(es)"
	if branches {
		what = "kept-attempt and fix branch(es)"
	}
	fmt.Fprintf(stdout, "deleted %d %s and %d results/ folder(s) of those tickets\n", len(out.BranchesDeleted), what, len(out.ResultsDeleted))
	fmt.Fprintf(stdout, "deleted %d environment(s) no night used in %s (each repository's latest kept)\n", len(out.EnvironmentsDeleted), olderThan)
	if !branches {
		fmt.Fprintln(stderr, "fix branches of done tickets are kept; --branches deletes them too")
	}
}

// gcFiles deletes what tickets finished more than age ago keep on disk, and the environments
// no night used within age, into out; a failure to delete one is a warning, not an error.
func (e *env) gcFiles(s *store.Store, age time.Duration, fixes bool, out *gcJSON) error {
	old, err := s.FinishedBefore(e.ctx, time.Now().Add(-age))
	if err != nil {
		return err
	}
	for _, t := range old {
		b, r, err := gcTicketFiles(e.ctx, e.cfg, t, fixes)
		out.BranchesDeleted = append(out.BranchesDeleted, b...)
		out.ResultsDeleted = append(out.ResultsDeleted, r...)
		if err != nil {
			fmt.Fprintf(e.stderr, "warning: ticket %d: %v\n", t.ID, err)
		}
	}
	envs, err := envsetup.Prune(filepath.Join(e.cfg.Workspace, daemon.EnvsDir), slices.Collect(maps.Keys(e.cfg.Repos)), age, time.Now())
	out.EnvironmentsDeleted = append(out.EnvironmentsDeleted, envs...)
	if err != nil {
		fmt.Fprintf(e.stderr, "warning: environments: %v\n", err)
	}
	return nil
}

// gcTicketFiles deletes what one old finished ticket keeps on disk: its kept-attempt branches
// (and with fixes its fix branch, when done) and its results/<id>/ folder, which must lie
// inside the configured output folder. A branch checked out in a worktree is refused by git.
func gcTicketFiles(ctx context.Context, cfg *config.Config, t store.Ticket, fixes bool) (branches, results []string, err error) {
	var errs []string
	if repo, ok := cfg.Repos[t.Repo]; ok {
		branches, errs = gcBranches(ctx, repo.Path, t, fixes)
		for i, b := range branches {
			branches[i] = t.Repo + ":" + b
		}
	}
	results, rerrs := gcResults(cfg.Output, t)
	errs = append(errs, rerrs...)
	if len(errs) > 0 {
		return branches, results, fmt.Errorf("gc: %s", strings.Join(errs, "; "))
	}
	return branches, results, nil
}

// gcBranches deletes ticket t's kept-attempt branches in the repository at repoPath, and
// its fix branch too when fixes is set and the ticket is done.
func gcBranches(ctx context.Context, repoPath string, t store.Ticket, fixes bool) (deleted, errs []string) {
	attempts := regexp.MustCompile(`^ticketd/` + strconv.FormatInt(t.ID, 10) + `-attempt-[0-9]+(-[0-9]+|-released)?$`)
	names, err := worktree.Branches(ctx, repoPath, fmt.Sprintf("ticketd/%d-", t.ID))
	if err != nil {
		errs = append(errs, err.Error())
	}
	for _, b := range names {
		fix := b == t.Branch && t.State == store.StateDone
		if !attempts.MatchString(b) && !(fixes && fix) {
			continue
		}
		if err := worktree.DeleteBranch(ctx, repoPath, b); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		deleted = append(deleted, b)
	}
	return deleted, errs
}

// gcResults deletes ticket t's results folder, only when it lies inside output.
func gcResults(output string, t store.Ticket) (deleted, errs []string) {
	dir := t.ResultDir
	if dir == "" {
		dir = filepath.Join(output, strconv.FormatInt(t.ID, 10))
	}
	rel, err := filepath.Rel(output, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
		return nil, nil
	}
	if _, err := os.Lstat(dir); err != nil {
		return nil, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, []string{err.Error()}
	}
	return []string{dir}, nil
}
