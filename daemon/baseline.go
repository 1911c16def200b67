package daemon

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// repoFacts is what is computed once per repository and base commit: the checks at the base
// (the gate compares against them) and the file map (shared by every ticket's prompt).
type repoFacts struct {
	results []validate.Result
	// checks are the repository's checks as the gate must run them: with the conditions the
	// base run needed (validate.Adapt: unittest for a root test.py, src/ or lib/ on the path,
	// addopts without a missing plugin's options).
	checks []validate.Check
	// tests is where the repository keeps its tests, read at the base commit.
	tests   *discover.Tests
	repoMap string
	// imports is the base's import graph, from which each submit's is made (nil: none).
	imports *validate.BaseImports
	// instructions is the repository's instructions block (AGENTS.md and the like, read at
	// the base commit): the same bytes for every ticket of the repository at this base.
	instructions string
	// extensions are the compiled extension modules the base's build files declare.
	extensions extensions
	// deps are the requirements the base's pyproject.toml, setup.cfg and requirements files
	// list: where a module the checks lack is declared, and so how to install it.
	deps  discover.Dependencies
	flaky []string // tests that failed at the base, then passed when re-run alone
	// reused is set when the results came from the database (a baseline computed on an
	// earlier night at the same base commit and checks); computedAt and took describe the
	// run that produced them.
	reused     bool
	computedAt time.Time
	took       time.Duration
}

// baselines computes repoFacts once per (repository, base commit), even when several workers
// ask at the same moment: the first computes, the others wait for its answer. With a store,
// a healthy baseline is kept in the database per (repository, base commit, checks hash), so
// a later night at an unchanged base runs no baseline check.
type baselines struct {
	checks pipeline.CheckRunner
	store  *store.Store // nil: kept for this night only
	log    *slog.Logger
	now    func() time.Time
	// versions tells the pytest each pytest check runs with, asking probed (the night's
	// start-up probes, which read it as they import pytest); nil: not known, discovery
	// follows the newest pytest.
	versions pytestVersioner
	probed   *validate.Probed

	mu    sync.Mutex
	facts map[string]*baselineEntry
}

type baselineEntry struct {
	done  chan struct{}
	facts repoFacts
	err   error
}

// newBaselines keeps baselines in st across nights (nil: in memory for this night only),
// logging what it cannot keep to log.
func newBaselines(checks pipeline.CheckRunner, st *store.Store, log *slog.Logger) *baselines {
	return &baselines{checks: checks, store: st, log: cmp.Or(log, slog.Default()), now: time.Now, facts: map[string]*baselineEntry{}}
}

// baselineFormat versions what a stored baseline means: bump it when the parsers or the
// gate's reading of results change, so older stored baselines are recomputed. 2: checks of
// a src/ layout run with src on PYTHONPATH, and results carry notes. 3: results carry the
// condition the base run needed (validate.Condition), and tests are found by the
// repository's own discovery settings. 4: results carry each test's outcome (the gate's
// "nothing the base passed may disappear" reads them). 5: ruff runs with --no-fix (a
// project's fix = true hid its fixable findings), mypy with --no-pretty and, without a
// command, on the files its configuration names. 6: results carry the tests
// pytest.importorskip skipped (validate.Result.ImportSkips). 7: pytest's rootdir is
// pinned to the worktree when the root's files hold no pytest section (node ids changed
// for a tests/pytest.ini beside such a file). 8: pytest results carry the data files the
// tests read (validate.Result.Reads), which the gate keeps in their base versions.
const baselineFormat = 8

// checksHash names a checks configuration: a baseline is valid only for the checks (names,
// kinds, commands, time-outs, interpreters, passed environment) that produced it.
func checksHash(checks []validate.Check) string {
	data, err := json.Marshal(struct {
		Format int
		Checks []validate.Check
	}{baselineFormat, checks})
	if err != nil {
		return "" // unreachable for plain structs; an empty hash disables the store
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// get returns the facts for the tree's base commit, computing them in tree (which must still
// be untouched at the base commit) if nobody has yet.
func (b *baselines) get(ctx context.Context, repo config.Repo, tree *worktree.Tree) (repoFacts, error) {
	key := tree.RepoPath + "@" + tree.BaseCommit
	b.mu.Lock()
	e, ok := b.facts[key]
	if !ok {
		e = &baselineEntry{done: make(chan struct{})}
		b.facts[key] = e
	}
	b.mu.Unlock()
	if ok {
		select {
		case <-e.done:
			return e.facts, e.err
		case <-ctx.Done():
			return repoFacts{}, context.Cause(ctx)
		}
	}
	e.facts, e.err = b.compute(ctx, repo, tree)
	if e.err != nil {
		// Let the next worker try again rather than caching a failure (it may be transient).
		b.mu.Lock()
		delete(b.facts, key)
		b.mu.Unlock()
	}
	close(e.done)
	return e.facts, e.err
}

// scanBase is the import graph of tree, which every submit at its base starts from; nil
// (each submit scans its whole worktree) when the tree holds a change (a review round's
// tree is seeded with its fix) or the scan failed.
func (b *baselines) scanBase(ctx context.Context, tree *worktree.Tree) *validate.BaseImports {
	changed, err := tree.Changed(ctx)
	if err != nil || len(changed) > 0 {
		return nil
	}
	g, err := validate.ScanBase(tree.Dir)
	if err != nil {
		b.log.Warn("import scan of the base: each submit scans its whole worktree", "repo", tree.RepoPath, "base_commit", short(tree.BaseCommit), "err", err)
	}
	return g
}

func (b *baselines) compute(ctx context.Context, repo config.Repo, tree *worktree.Tree) (repoFacts, error) {
	var f repoFacts
	files, err := worktree.FilesAt(tree.RepoPath, tree.BaseCommit)
	if err != nil {
		return f, err
	}
	f.repoMap = pipeline.RepoMap(tree.Dir, files)
	f.imports = b.scanBase(ctx, tree)
	ins, err := pipeline.ReadInstructions(ctx, tree.FileAtBase, repo.Instructions)
	if err != nil {
		if ctx.Err() != nil {
			return f, context.Cause(ctx)
		}
		b.log.Warn("repository instructions: some were not read", "repo", tree.RepoPath, "base_commit", short(tree.BaseCommit), "err", err)
	}
	f.instructions = ins.Block
	atBase := func(p string) ([]byte, bool) {
		data, found, err := tree.FileAtBase(ctx, p)
		return data, found && err == nil
	}
	f.extensions = declaredExtensions(atBase)
	f.deps = discover.ReadDependencies(atBase, files)
	if len(ins.Files) > 0 {
		b.log.Info("repository instructions", "repo", tree.RepoPath, "base_commit", short(tree.BaseCommit),
			"files", strings.Join(ins.Files, ", "), "bytes", ins.Bytes, "cut", ins.Cut)
	}
	repo.Checks = b.withPytestVersions(ctx, tree.Dir, repo.Checks)
	hash := checksHash(repo.Checks)
	if b.store != nil && hash != "" {
		if f, ok := b.load(ctx, tree, hash, f); ok {
			f.checks = validate.Conditioned(repo.Checks, f.results)
			f.tests = baseTests(ctx, tree, f.checks)
			return f, nil
		}
	}
	start := b.now()
	f.results = b.checks.Run(ctx, tree.Dir, repo.Checks)
	// A failure that is ticketd's to work around (a root test.py only unittest runs, a src/
	// package nothing puts on the path, a plugin addopts names that is not installed) is
	// worked around, and every attempt's gate runs the checks the same way.
	f.results = validate.Adapt(ctx, func(ctx context.Context, cs []validate.Check) []validate.Result {
		return b.checks.Run(ctx, tree.Dir, cs)
	}, tree.Dir, repo.Checks, f.results)
	f.checks = validate.Conditioned(repo.Checks, f.results)
	f.tests = baseTests(ctx, tree, f.checks)
	// A test failing at the base is run once more (the base's failing tests together): a
	// flaky one must neither count as a failure a fix has to make pass nor make a later flake
	// look like a fix.
	f.results, f.flaky = pipeline.RerunBase(ctx, b.checks, tree.Dir, f.checks, f.results, pipeline.FailingTests(f.results))
	if ctx.Err() != nil {
		return f, context.Cause(ctx)
	}
	f.computedAt, f.took = start, b.now().Sub(start)
	// Only a baseline that can gate fixes is kept: an unhealthy one (a tool that did not
	// start, a suite that collected nothing) may heal by tomorrow without a new commit.
	if b.store != nil && hash != "" && len(validate.Health(f.results)) == 0 && validate.Aborted(f.results) == "" {
		results, rerr := json.Marshal(f.results)
		flaky, ferr := json.Marshal(f.flaky)
		err := errors.Join(rerr, ferr)
		if err == nil {
			err = b.store.SaveBaseline(context.WithoutCancel(ctx), store.Baseline{Repo: tree.RepoPath, BaseCommit: tree.BaseCommit,
				ChecksHash: hash, Results: string(results), Flaky: string(flaky), Duration: f.took})
		}
		if err != nil {
			// The night goes on with the baseline in memory; the next night recomputes it.
			b.log.Warn("keep baseline", "repo", tree.RepoPath, "base_commit", short(tree.BaseCommit), "err", err)
		}
	}
	return f, nil
}

// baseTests reads where the repository keeps its tests from its files at the base commit.
func baseTests(ctx context.Context, tree *worktree.Tree, checks []validate.Check) *discover.Tests {
	return discover.Read(func(p string) ([]byte, bool) {
		data, found, err := tree.FileAtBase(ctx, p)
		return data, found && err == nil
	}, validate.DiscoverOptions(checks))
}

// load returns the stored baseline for the tree's base commit and checks, when one is kept
// and still reads as results.
func (b *baselines) load(ctx context.Context, tree *worktree.Tree, hash string, f repoFacts) (repoFacts, bool) {
	kept, ok, err := b.store.LoadBaseline(ctx, tree.RepoPath, tree.BaseCommit, hash)
	if err != nil || !ok {
		if err != nil {
			b.log.Warn("load kept baseline; computing it", "repo", tree.RepoPath, "base_commit", short(tree.BaseCommit), "err", err)
		}
		return f, false
	}
	if err := json.Unmarshal([]byte(kept.Results), &f.results); err != nil {
		return f, false
	}
	if err := json.Unmarshal([]byte(kept.Flaky), &f.flaky); err != nil {
		return f, false
	}
	f.reused, f.computedAt, f.took = true, kept.CreatedAt, kept.Duration
	return f, true
}

// pytestVersioner is implemented by a check runner that can tell which pytest a check runs
// (*validate.Runner does).
type pytestVersioner interface {
	PytestVersion(ctx context.Context, dir string, c validate.Check, seen *validate.Probed) string
}

var _ pytestVersioner = (*validate.Runner)(nil)

// withPytestVersions returns checks with each pytest check's PytestVersion set, so that
// discovery reads the configuration that pytest reads (pytest 7 ignores pyproject.toml's
// [tool.pytest]). The version is not part of the checks' hash: a kept baseline stays valid.
func (b *baselines) withPytestVersions(ctx context.Context, dir string, checks []validate.Check) []validate.Check {
	if b.versions == nil {
		return checks
	}
	out := slices.Clone(checks)
	for i, c := range out {
		if c.Kind == validate.KindPytest && c.PytestVersion == "" {
			out[i].PytestVersion = b.versions.PytestVersion(ctx, dir, c, b.probed)
		}
	}
	return out
}

// preflighter is implemented by a check runner that can tell, before any run, whether a
// check's tool starts (*validate.Runner does).
type preflighter interface {
	Preflight(ctx context.Context, dir string, c validate.Check, seen *validate.Probed) error
}

// unhealthyRepos is the set of repositories whose baseline cannot gate fixes tonight; their
// tickets are not claimed. Safe for concurrent use.
type unhealthyRepos struct {
	mu    sync.Mutex
	names map[string]string // repo → one-line reason
}

func (u *unhealthyRepos) add(repo, reason string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, seen := u.names[repo]; seen {
		return false
	}
	if u.names == nil {
		u.names = map[string]string{}
	}
	u.names[repo] = reason
	return true
}

func (u *unhealthyRepos) list() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Sorted(maps.Keys(u.names))
}

// reasons lists each repository with its reason, sorted by name.
func (u *unhealthyRepos) reasons() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(u.names)) {
		out = append(out, name+": "+u.names[name])
	}
	return out
}

func (u *unhealthyRepos) has(repo string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.names[repo]
	return ok
}

// startBaselines computes the baseline of every repository that has open tickets, while the
// workers work: up to one per worker at a time, each repository's tickets held back (paused)
// until its own baseline is ready, then claimable at once (idle workers are woken). A
// repository whose base cannot gate a fix (see validate.Health) is marked unhealthy: said
// once in the night's log with the failing command and its first error lines, and once as a
// note on each open ticket of the repository; no attempt is spent on it. The computed
// baselines are cached for the workers. done is called once every baseline has ended (the
// night's preparation is over then, for a second node waiting to join); the returned func
// waits for that.
func (w *workerPool) startBaselines(ctx context.Context, done func()) (wait func()) {
	var todo []string
	for _, name := range slices.Sorted(maps.Keys(w.cfg.Repos)) {
		repo := w.cfg.Repos[name]
		open, err := w.d.Store.List(ctx, store.Filter{States: []store.State{store.StateQueued, store.StateRunning}, Repo: name})
		if err != nil || len(open) == 0 || len(repo.Checks) == 0 {
			continue
		}
		todo = append(todo, name)
	}
	w.pending.add(todo...)
	w.setPaused()
	sem := make(chan struct{}, max(w.cfg.Night.Workers, 1))
	var wg sync.WaitGroup
	for _, name := range todo {
		wg.Go(func() {
			defer func() {
				// Unpause, then stop counting it as pending, then wake the idle workers: a
				// worker that sees no baseline pending must find the tickets claimable, or it
				// would end its night (nextWork reads the pending set before the queue).
				w.setPaused(name)
				w.pending.remove(name)
				w.pending.wake()
			}()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			w.checkRepo(ctx, name)
		})
	}
	ended := make(chan struct{})
	go func() {
		wg.Wait()
		done()
		close(ended)
	}()
	return func() { <-ended }
}

// checkRepo computes one repository's baseline in a worktree of its own and marks the
// repository unhealthy when its base cannot gate a fix.
func (w *workerPool) checkRepo(ctx context.Context, name string) {
	repo := w.cfg.Repos[name]
	tree, err := w.trees.Prepare(ctx, repo.Path, repo.BaseRef, fmt.Sprintf("ticketd/baseline-%s", worktree.BranchName(0, name)[len("ticketd/"):]))
	if err != nil {
		// The worker's own Prepare reports this per ticket, with the right failure kind.
		w.log.Warn("baseline worktree", "repo", name, "err", err)
		return
	}
	repo, err = w.envs.repoEnv(ctx, name, repo, tree)
	var facts repoFacts
	if err == nil {
		facts, err = w.baselines.get(ctx, repo, tree)
	}
	if rerr := w.trees.Remove(context.WithoutCancel(ctx), tree, false); rerr != nil {
		w.log.Warn("remove baseline worktree", "repo", name, "dir", tree.Dir, "err", rerr)
	}
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("baseline checks", "repo", name, "err", err)
		}
		return
	}
	w.noteBaseline(ctx, name, tree.BaseCommit, facts)
	w.markUnhealthy(ctx, name, tree.BaseCommit, facts.extensions, facts.deps, validate.Health(facts.results))
}

// pendingBaselines are the repositories whose baseline is being computed: their tickets wait.
// Safe for concurrent use.
type pendingBaselines struct {
	mu    sync.Mutex
	names map[string]bool
	ready chan struct{} // closed and replaced each time a baseline ends
}

func (p *pendingBaselines) add(names ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.names == nil {
		p.names = map[string]bool{}
	}
	for _, n := range names {
		p.names[n] = true
	}
}

func (p *pendingBaselines) remove(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.names, name)
}

// wake wakes whoever waits for a baseline to end.
func (p *pendingBaselines) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready != nil {
		close(p.ready)
		p.ready = nil
	}
}

func (p *pendingBaselines) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.names))
}

// waitable returns a channel closed when the next baseline ends, nil when none is pending.
func (p *pendingBaselines) waitable() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.names) == 0 {
		return nil
	}
	if p.ready == nil {
		p.ready = make(chan struct{})
	}
	return p.ready
}

// setPaused holds back the tickets of unhealthy repositories and of those whose baseline is
// not ready yet, but for ready (whose baseline just ended).
func (w *workerPool) setPaused(ready ...string) {
	pending := slices.DeleteFunc(w.pending.list(), func(n string) bool { return slices.Contains(ready, n) })
	w.d.Store.SetPaused(append(w.unhealthy.list(), pending...))
}

// noteBaseline says, in the night's log and as a note on each open ticket of the repository,
// whether tonight's baseline ran the checks or was reused from an earlier night.
func (w *workerPool) noteBaseline(ctx context.Context, repo, base string, facts repoFacts) {
	var text string
	if facts.reused {
		text = fmt.Sprintf("baseline of %s at %s reused (computed %s in %s); no baseline check ran",
			repo, short(base), facts.computedAt.UTC().Format(time.RFC3339), facts.took.Round(time.Millisecond))
	} else {
		text = fmt.Sprintf("baseline of %s at %s computed: the checks ran at the base commit in %s",
			repo, short(base), facts.took.Round(time.Millisecond))
	}
	files, err := worktree.FilesAt(w.cfg.Repos[repo].Path, base)
	if err != nil {
		w.log.Warn("list the base's files for the baseline note", "repo", repo, "err", err)
	}
	notes := baselineNotes(facts.results, files, facts.extensions, facts.deps)
	if u := facts.tests.UnreadNote(); u != "" {
		notes = append(notes, u)
	}
	if m := facts.tests.MissingTestpathsNote(files); m != "" {
		notes = append(notes, m)
	}
	if env := w.envs.envNote(repo); env != "" {
		notes = append(notes, env)
	}
	for _, n := range notes {
		text += "\n" + n
	}
	w.log.Info("baseline", "repo", repo, "base_commit", short(base), "reused", facts.reused, "duration_s", seconds(facts.took), "notes", strings.Join(notes, "; "))
	open, err := w.d.Store.List(context.WithoutCancel(ctx), store.Filter{States: []store.State{store.StateQueued, store.StateRunning}, Repo: repo})
	if err != nil {
		w.log.Warn("list tickets for baseline note", "repo", repo, "err", err)
	}
	for _, t := range open {
		if err := w.d.Store.AddNote(context.WithoutCancel(ctx), t.ID, "ticketd", text); err != nil {
			w.log.Warn("note baseline on ticket", "ticket", t.ID, "err", err)
		}
	}
}

// baselineNotes are what ticketd changed about how the base commit's checks ran (a src/
// layout's PYTHONPATH), each once, prefixed by the checks it concerns, the test files
// that could not even import there for want of a module (see importNote), and the tests
// skipped because the repository's own extension is not built (see extensionSkipNote);
// files and ext are the base's, to tell the repository's own compiled extensions from
// missing dependencies.
func baselineNotes(results []validate.Result, files []string, ext extensions, deps discover.Dependencies) []string {
	var order []string
	by := map[string][]string{}
	for _, r := range results {
		for _, n := range r.Notes {
			if _, ok := by[n]; !ok {
				order = append(order, n)
			}
			by[n] = append(by[n], r.Name)
		}
	}
	out := make([]string, 0, len(order))
	for _, n := range order {
		out = append(out, fmt.Sprintf("checks %s: %s", strings.Join(by[n], ", "), n))
	}
	for _, r := range results {
		if miss := validate.MissingImports(r); len(miss) > 0 {
			out = append(out, importNote(r.Name, miss, files, ext, deps))
		}
		if n := extensionSkipNote(r, files, ext); n != "" {
			out = append(out, n)
		}
		if miss := validate.MissingFixtures(r); len(miss) > 0 {
			out = append(out, fixtureNote(r.Name, miss))
		}
		if n := asyncSkipNote(r); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// asyncSkipNote says how many tests of a pytest result are `async def` tests that pytest
// skipped at the base commit for want of an async plugin (asgiref's, written for
// pytest-asyncio): a skipped test gates nothing, where the report's "skipped" alone reads
// like a platform's skipif. "" when none.
func asyncSkipNote(r validate.Result) string {
	if len(r.AsyncSkips) == 0 {
		return ""
	}
	var files []string
	for _, id := range r.AsyncSkips {
		if file, _, _ := strings.Cut(id, "::"); !slices.Contains(files, file) {
			files = append(files, file)
		}
	}
	return fmt.Sprintf("check %s: %d test(s) are `async def` tests that pytest skips at the base commit because the checks' interpreter has no async plugin (pytest-asyncio, anyio, ...), so they never run and gate no fix (%s); install the plugin the project's tests use for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md)",
		r.Name, len(r.AsyncSkips), strings.Join(clipList(files, 3), ", "))
}

// pluginFixtures are the plugins that define fixtures tests often use without the plugin
// installed, to name in fixtureNote.
var pluginFixtures = map[string]string{
	"mocker": "pytest-mock", "class_mocker": "pytest-mock", "module_mocker": "pytest-mock", "package_mocker": "pytest-mock", "session_mocker": "pytest-mock",
	"benchmark": "pytest-benchmark", "httpserver": "pytest-httpserver", "requests_mock": "requests-mock", "freezer": "pytest-freezer",
}

// fixtureNote says which fixtures no conftest.py or installed plugin provides at the base
// commit and how many tests errored at setup for want of each: like a file that cannot
// import, those tests gate no fix, and platformdirs' 669 such tests (pytest-mock's mocker) are
// only lines among the base's failures in a report.
func fixtureNote(check string, miss []validate.FixtureMiss) string {
	n := 0
	parts := make([]string, 0, len(miss))
	for _, m := range miss {
		n += m.Tests
		part := fmt.Sprintf("%s, %d test(s) in %s", m.Fixture, m.Tests, strings.Join(clipList(m.Files, 3), ", "))
		if plugin := pluginFixtures[m.Fixture]; plugin != "" {
			part += " (a fixture of " + plugin + ")"
		}
		parts = append(parts, part)
	}
	return fmt.Sprintf("check %s: %d test(s) error at setup at the base commit, so they cannot gate a fix; no conftest.py or installed plugin provides the fixture: %s; install the plugins that define these for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md)",
		check, n, strings.Join(parts, "; "))
}

// importNote says which test files failed to import at the base commit and which missing
// module each lacked: their tests gate no fix (a fix to the code they test is shipped on
// the other tests and its own), and the report shows them only one by one among the base's
// failures. A missing dependency is the operator's to install; a compiled extension of the
// repository's own package (ownExtension), a Python 2 module (python2Module) or a module the
// repository holds in another folder (ownModule) no install brings, so the note says that
// instead of sending the operator to install it (docutils' sandbox/: StringIO, __init__,
// docutils_to_docbook).
func importNote(check string, miss []validate.ImportMiss, files []string, ext extensions, deps discover.Dependencies) string {
	n, installable := 0, 0 // installable: the modules an install may bring
	parts := make([]string, 0, len(miss))
	for _, m := range miss {
		n += len(m.Files)
		names := m.Files
		more := ""
		if len(names) > 3 {
			names, more = names[:3], fmt.Sprintf(" and %d more", len(m.Files)-3)
		}
		part := fmt.Sprintf("%s (%s%s)", m.Module, strings.Join(names, ", "), more)
		if src := ownExtension(files, ext, m.Module); src != "" {
			part += fmt.Sprintf(", the repository's own compiled extension (%s), which ticketd does not build into the checks' worktrees (docs/environments.md, Limits)", src)
		} else if src := ownModule(files, m.Module, first(m.Files)); src != "" && m.Module != "__init__" {
			// Before the Python 2 names: a repository's own commands/ or sets.py is what a
			// test file lacks, not Python 2's module of that name.
			part += fmt.Sprintf(", a module of the repository (%s) that is not on the path those tests run with, which no install brings", src)
		} else if why := python2Module(m.Module); why != "" {
			part += ", " + why + ": those files are Python 2 code, which no install makes importable"
		} else {
			installable++
			if d := deps.For(m.Module); len(d) > 0 {
				// mako's tests lack markupsafe, a dependency of the project itself: `pip
				// install -e .` brings it, where "install these" leaves the operator to guess.
				part += fmt.Sprintf(", listed as %q in %s (pip %s)", d[0].Requirement, d[0].Where(), d[0].Install())
			}
		}
		parts = append(parts, part)
	}
	text := fmt.Sprintf("check %s: %d test file(s) fail to import at the base commit, so their tests cannot gate a fix; missing: %s",
		check, n, strings.Join(parts, "; "))
	if installable > 0 {
		what := "these"
		if installable < len(parts) {
			what = "the others"
		}
		text += "; install " + what + " for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md)"
	}
	return text
}

// python2Modules are modules of Python 2's standard library that Python 3 renamed or
// removed: a test file importing one is Python 2 code (docutils' sandbox/ imports StringIO).
var python2Modules = map[string]bool{
	"StringIO": true, "cStringIO": true, "cPickle": true, "ConfigParser": true, "Queue": true,
	"urllib2": true, "urlparse": true, "httplib": true, "HTMLParser": true, "htmlentitydefs": true,
	"__builtin__": true, "commands": true, "Tkinter": true, "tkMessageBox": true, "SocketServer": true,
	"BaseHTTPServer": true, "SimpleHTTPServer": true, "CGIHTTPServer": true, "Cookie": true,
	"cookielib": true, "xmlrpclib": true, "SimpleXMLRPCServer": true, "dummy_thread": true,
	"thread": true, "copy_reg": true, "repr": true, "anydbm": true, "dbhash": true, "whichdb": true,
	"UserDict": true, "UserList": true, "UserString": true, "sets": true, "md5": true, "sha": true,
	"exceptions": true, "new": true, "popen2": true, "robotparser": true, "dircache": true,
}

// python2Module says why module is Python 2's, "" when it is not known to be: a module of
// its standard library that Python 3 has not, or __init__, which only Python 2's implicit
// relative import (`from __init__ import X` in a package) finds.
func python2Module(module string) string {
	switch {
	case module == "__init__":
		return "Python 2's implicit relative import of the package's __init__.py"
	case python2Modules[module]:
		return "a module of Python 2's standard library that Python 3 has not"
	}
	return ""
}

// ownModule is the repository's file that is module (a top-level name: a .py file or a
// package's __init__.py, in any folder) nearest to the test file near that imports it (the
// most leading folders in common, then the shortest path), "" when there is none. A test
// file that cannot import a module the repository holds elsewhere (docutils'
// sandbox/docbook/test/ imports docutils_to_docbook, in sandbox/docbook/scripts/) lacks a
// path, not an install.
func ownModule(files []string, module, near string) string {
	if module == "" || strings.Contains(module, ".") {
		return ""
	}
	best, bestShared := "", -1
	for _, f := range files {
		for _, want := range []string{module + ".py", module + "/__init__.py"} {
			if f != want && !strings.HasSuffix(f, "/"+want) {
				continue
			}
			shared := sharedFolders(f, near)
			if shared > bestShared || shared == bestShared && len(f) < len(best) {
				best, bestShared = f, shared
			}
		}
	}
	return best
}

// sharedFolders is how many leading folders paths a and b have in common.
func sharedFolders(a, b string) int {
	as, bs := strings.Split(path.Dir(a), "/"), strings.Split(path.Dir(b), "/")
	n := 0
	for n < len(as) && n < len(bs) && as[n] == bs[n] && as[n] != "." {
		n++
	}
	return n
}

// extensionSources are the suffixes of the source files a compiled extension module is
// built from (C, C++, Cython), each also in CPython's own spelling (_speedmodule.c).
var extensionSources = []string{".c", ".cpp", ".cc", ".cxx", ".pyx", "module.c"}

// ownExtension is what module is built from when it is a compiled extension inside the
// repository's own package: what its build files declare it by (ext: a Rust crate's
// module-name, fastx._core), or its source file at the base (files: bitarray._bitarray,
// built by setup.py from bitarray/_bitarray.c); "" otherwise: a top-level module (a
// recipe that installs the project builds it where the checks import it from), or one
// whose Python source is there. The checks import the package from the worktree, where no
// build puts the extension.
func ownExtension(files []string, ext extensions, module string) string {
	if !strings.Contains(module, ".") {
		return ""
	}
	if by := ext[module]; by != "" {
		return by
	}
	if len(files) == 0 {
		return ""
	}
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[f] = true
	}
	for _, prefix := range []string{"", "src/"} {
		base := prefix + strings.ReplaceAll(module, ".", "/")
		if have[base+".py"] || have[base+"/__init__.py"] || !have[path.Dir(base)+"/__init__.py"] {
			continue
		}
		for _, ext := range extensionSources {
			if have[base+ext] {
				return base + ext
			}
		}
	}
	return ""
}

// extensionHints replaces the hint of each problem whose missing module is the repository's
// own compiled extension (ownExtension): neither installing the project nor PYTHONPATH puts
// the built extension into the worktree the checks import the package from.
func extensionHints(files []string, ext extensions, problems []validate.Problem) []validate.Problem {
	var out []validate.Problem
	for i, p := range problems {
		src := ownExtension(files, ext, p.Missing)
		if src == "" {
			continue
		}
		if out == nil {
			out = slices.Clone(problems)
		}
		out[i].Hint = fmt.Sprintf("%s is a compiled extension of the repository's own package, built from %s, and the checks import that package from the worktree, "+
			"where nothing builds it: ticketd cannot run these tests yet, with or without a repos.<name>.setup recipe (docs/environments.md, Limits); "+
			"leave such a repository out of ticketd's, or give it a check whose command runs only tests that do not import the extension", p.Missing, src)
	}
	if out == nil {
		return problems
	}
	return out
}

// markUnhealthy records problems of a repository's baseline once per night.
func (w *workerPool) markUnhealthy(ctx context.Context, repo, base string, ext extensions, deps discover.Dependencies, problems []validate.Problem) bool {
	if len(problems) == 0 {
		return false
	}
	problems = recipeHints(repo, w.cfg.Repos[repo], problems)
	problems = dependencyHints(repo, w.cfg.Repos[repo], deps, problems)
	if files, err := worktree.FilesAt(w.cfg.Repos[repo].Path, base); err == nil {
		problems = unittestStartHints(files, problems)
		problems = extensionHints(files, ext, problems)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "repository %s is unhealthy at base %s: its tickets are not claimed until it is fixed (no attempt spent).", repo, short(base))
	for _, p := range problems {
		fmt.Fprintf(&b, "\n%s", p)
		for _, l := range p.Lines {
			fmt.Fprintf(&b, "\n    %s", l)
		}
	}
	text := b.String()
	if !w.unhealthy.add(repo, text) {
		return true
	}
	w.setPaused() // claims skip its tickets from now on
	for _, p := range problems {
		w.log.Error("repository unhealthy: its tickets are not claimed tonight", "repo", repo, "base_commit", short(base),
			"check", p.Check, "command", strings.Join(p.Command, " "), "reason", p.Reason, "hint", p.Hint, "first_lines", strings.Join(p.Lines, "\n"))
	}
	open, err := w.d.Store.List(context.WithoutCancel(ctx), store.Filter{States: []store.State{store.StateQueued, store.StateRunning}, Repo: repo})
	if err != nil {
		w.log.Warn("list tickets of unhealthy repository", "repo", repo, "err", err)
	}
	for _, t := range open {
		if err := w.d.Store.AddNote(context.WithoutCancel(ctx), t.ID, "ticketd", text); err != nil {
			w.log.Warn("note unhealthy repository on ticket", "ticket", t.ID, "err", err)
		}
	}
	return true
}

// unittestStartHints names, in the hint of a unittest check that collected no test at the
// base, the folders holding the base's test modules (files) that discovery from the root
// never enters, because a folder on the way has no __init__.py: typing_extensions keeps
// src/test_typing_extensions.py beside its code and runs it from src/. The generic hint
// ("-s tests") would send the operator to a folder that may not exist.
func unittestStartHints(files []string, problems []validate.Problem) []validate.Problem {
	var out []validate.Problem
	for i, p := range problems {
		if !strings.Contains(p.Reason, "collected no test") || !isUnittestRun(p.Command) {
			continue
		}
		starts := unreachedTestFolders(files)
		if len(starts) == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(problems)
		}
		shown := starts[:min(len(starts), 3)]
		out[i].Hint = fmt.Sprintf("the test modules are in %s, which unittest's discovery from the repository root does not enter (no __init__.py on the way): name the start folder in the check's command (command: [python3, -m, unittest, discover, -s, %s])",
			strings.Join(shown, ", "), shown[0])
	}
	if out == nil {
		return problems
	}
	return out
}

// isUnittestRun reports whether argv runs `python -m unittest`.
func isUnittestRun(argv []string) bool {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "-m" && argv[i+1] == "unittest" {
			return true
		}
	}
	return false
}

// unreachedTestFolders are the first folders without an __init__.py on the way from the root
// to each test*.py module of files, where `unittest discover` must start to find it: the
// folder with the most such modules first, then by name.
func unreachedTestFolders(files []string) []string {
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[f] = true
	}
	var out []string
	count := map[string]int{}
	for _, f := range files {
		name := path.Base(f)
		if !strings.HasPrefix(name, "test") || !strings.HasSuffix(name, ".py") || !strings.Contains(f, "/") {
			continue
		}
		parts := strings.Split(path.Dir(f), "/")
		for i := range parts {
			if strings.HasPrefix(parts[i], ".") {
				break // hidden folders are nobody's tests
			}
			dir := strings.Join(parts[:i+1], "/")
			if !have[dir+"/__init__.py"] {
				if count[dir] == 0 {
					out = append(out, dir)
				}
				count[dir]++
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(a, b))
	})
	return out
}
