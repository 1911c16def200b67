// Package config loads ticketd's YAML configuration strictly: an unknown key or a value of the
// wrong type is an error naming the file, the line and the key, because a typo in an unattended
// night's config must fail at start, not silently fall back to a default at 2 a.m.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/envsetup"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/spell"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// Config is the whole configuration. Relative paths in it (store.path, workspace, output,
// intake paths, repository paths) are resolved against BaseDir.
type Config struct {
	// BaseDir is the folder relative paths are resolved against: the daemon's state folder
	// (/var/lib/ticketd under systemd) when the config lives elsewhere (/etc/ticketd). A
	// relative base_dir is itself resolved against the config file's folder; unset means
	// the config file's folder. The process's working directory plays no part, so ticketd
	// and ticketctl --config read the same files from anywhere.
	BaseDir    string          `yaml:"base_dir"`
	Store      Store           `yaml:"store"`
	Night      Night           `yaml:"night"`
	Budget     Budget          `yaml:"budget"`
	Intake     []Source        `yaml:"intake"`
	Priorities map[string]int  `yaml:"priorities"`
	Repos      map[string]Repo `yaml:"repos"`
	Workspace  string          `yaml:"workspace"`
	Output     string          `yaml:"output"`
	Models     model.Config    `yaml:"models"`
	Log        Log             `yaml:"log"`
	// Sandbox is how the repositories' checks are isolated: bwrap (default) or none.
	Sandbox sandbox.Mode `yaml:"sandbox"`
	// SandboxPaths are further host paths the checks see read-only (a tool installed under
	// /opt or a home, a data folder the tests read). Everything else outside the system
	// folders, the worktree and the checks' tools is absent inside the sandbox.
	SandboxPaths []string `yaml:"sandbox_paths"`
	// SandboxUser is the unprivileged host user (a name or a uid) checks run as when ticketd
	// runs as root; empty means nobody. Without effect when ticketd is a user: the checks
	// are then that user.
	SandboxUser string `yaml:"sandbox_user"`
	// MaxWorktreeSize stops a check whose worktree (with its private /tmp) grows past it.
	MaxWorktreeSize ByteSize `yaml:"max_worktree_size"`
	// MaxCheckMemory is what each process of a check may allocate (sandbox.Limits.Memory);
	// past it an allocation fails and the check says it ran out of memory. 0 (the default)
	// means sandbox.DefaultMemoryLimit(): 4GiB, or 256MiB per CPU where that is more.
	MaxCheckMemory ByteSize `yaml:"max_check_memory"`
	// MaxCheckProcesses is how many processes and threads a check may run at once
	// (sandbox.Limits.Processes): a fork loop stops there instead of at the machine's pid_max.
	// 0 (the default) means sandbox.DefaultProcessLimit(): 4096, or twice the CPUs squared
	// where that is more.
	MaxCheckProcesses int    `yaml:"max_check_processes"`
	GitHub            GitHub `yaml:"github"`
	HTTP              HTTP   `yaml:"http"`
	// Review configures the checker's reviewers.
	Review Review `yaml:"review"`
	// Judge is how the judge's verdict counts: "gate" (default: an unmet criterion sends the
	// maker back, and ends the attempt after the last review round) or "advisory" (the
	// verdict only annotates the report).
	Judge string `yaml:"judge"`
	// Duplicates links tickets that report the same failure at intake.
	Duplicates Duplicates `yaml:"duplicates"`
	// Notify sends the morning digest (notify.webhook).
	Notify Notify `yaml:"notify"`

	// Node names this machine on the leases it takes and the nights it joins; default its
	// host name.
	Node string `yaml:"node"`

	// File is the path the configuration was read from ("" when built in code).
	File string `yaml:"-"`
}

// Store configures the ticket database: a SQLite file (path, the default ticketd.db) or a
// PostgreSQL database several nodes share (url_env, the variable holding its URL; or url,
// for a passwordless local URL). Set one of the three.
type Store struct {
	Path        string `yaml:"path"`
	URLEnv      string `yaml:"url_env"`
	URL         string `yaml:"url"`
	Synchronous string `yaml:"synchronous"` // SQLite only
}

// DefaultStorePath is store.path when the file sets none of path, url and url_env.
const DefaultStorePath = "ticketd.db"

// Location is what store.OpenLocation opens: the SQLite path, the URL, or the URL read from
// the variable url_env names (an error when it is unset or empty).
func (s Store) Location() (string, error) {
	switch {
	case s.URLEnv != "":
		v := os.Getenv(s.URLEnv)
		if v == "" {
			return "", fmt.Errorf("store.url_env: the variable %s is not set; export the PostgreSQL URL in it (postgres://user:password@host:5432/ticketd)", s.URLEnv)
		}
		return v, nil
	case s.URL != "":
		return s.URL, nil
	}
	return s.Path, nil
}

// Shared reports whether the store is a PostgreSQL database (several nodes may share it).
func (s Store) Shared() bool { return s.URL != "" || s.URLEnv != "" }

// Night configures one night's run: when it starts, how long it may claim, how many workers.
type Night struct {
	Schedule     string        `yaml:"schedule"`
	Window       time.Duration `yaml:"window"`
	Workers      int           `yaml:"workers"`
	Lease        time.Duration `yaml:"lease"`
	Heartbeat    time.Duration `yaml:"heartbeat"`
	MaxAttempts  int           `yaml:"max_attempts"`
	RetryBackoff time.Duration `yaml:"retry_backoff"`
	MaxDollars   float64       `yaml:"max_dollars"`
	Poll         time.Duration `yaml:"poll"`
	// MaxRescues is how many crashes may be blamed on a ticket (the daemon died while its
	// attempt was the only one running) before it is escalated; lost leases never count
	// against max_attempts.
	MaxRescues int `yaml:"max_rescues"`
	// Grace is how long attempts still running when the window closes may go on before
	// they are stopped, keeping their partial work, and released without spending an attempt.
	Grace time.Duration `yaml:"grace"`
	// MaxTransportReleases is how many times one ticket may be released for transport
	// faults in a night before it is parked until the next night; default 3.
	MaxTransportReleases int `yaml:"max_transport_releases"`
}

// Budget bounds one attempt at one ticket; the night's dollars are in Night.
type Budget struct {
	MaxSteps   int           `yaml:"max_steps"`
	MaxTokens  int64         `yaml:"max_tokens"`
	WallClock  time.Duration `yaml:"wall_clock"`
	MaxDollars float64       `yaml:"max_dollars"` // 0 = no per-attempt dollar cap
	// CompactAt is the share of the maker's context window at which its conversation is
	// compacted.
	CompactAt float64 `yaml:"compact_at"`
	// MaxQuestions is how many questions the maker may ask a human (ask_human) per ticket;
	// default 1, 0 never asks (the maker is neither offered ask_human nor told of it).
	MaxQuestions int `yaml:"max_questions"`
}

// Review configures the checker. Reviewers lists its angles: correctness always reviews
// (it is added first when the list leaves it out); security and performance are opt-in,
// each limited to changes whose paths match its globs or whose diff touches its patterns.
type Review struct {
	Reviewers []Reviewer `yaml:"reviewers"`
	// MaxRounds bounds the rounds a done ticket's fix gets after the morning (a writer's
	// review on its pull request, ticketctl revise, a red check it caused); the next ask
	// escalates the ticket with the open threads listed. Default 3.
	MaxRounds int `yaml:"max_rounds"`
}

// DefaultMaxRounds and MaxMaxRounds bound review.max_rounds.
const (
	DefaultMaxRounds = 3
	MaxMaxRounds     = 20
)

// Reviewer is one review angle and where it applies (see pipeline.Reviewer).
type Reviewer struct {
	Angle   string   `yaml:"angle"`
	Paths   []string `yaml:"paths"`
	Touches []string `yaml:"touches"`
}

// PipelineReviewers compiles the configured reviewers, correctness first; the configuration
// was validated, so compiling cannot fail.
func (r Review) PipelineReviewers() []pipeline.Reviewer {
	out := pipeline.DefaultReviewers()
	for _, rc := range r.Reviewers {
		if rc.Angle == pipeline.AngleCorrectness {
			continue
		}
		rv, err := pipeline.NewReviewer(rc.Angle, rc.Paths, rc.Touches)
		if err == nil {
			out = append(out, rv)
		}
	}
	return out
}

// Source is one place tickets come from.
type Source struct {
	Kind string `yaml:"kind"`
	Path string `yaml:"path"`
	Repo string `yaml:"repo"`
}

// Repo is a local git repository ticketd may fix, and the checks that gate its fixes.
type Repo struct {
	Path    string           `yaml:"path"`
	BaseRef string           `yaml:"base_ref"`
	Checks  []validate.Check `yaml:"checks"`
	// PassEnv names variables of the daemon's environment the checks may see besides the
	// sandbox's allowlist (PATH, LANG, LC_*, TZ, PYTHON*...). An endpoint's api_key_env is
	// refused.
	PassEnv []string `yaml:"pass_env"`
	// Python is the interpreter the repository's checks run with (pytest, mypy); empty
	// means its .venv/bin/python when present, else the first python3 that has the tool.
	Python string `yaml:"python"`
	// Instructions names the files of the repository that tell coding agents how it works,
	// read at the base commit in this order, every one present (capped together at 8 KiB).
	// Unset means the first present of AGENTS.md, CLAUDE.md,
	// .github/copilot-instructions.md and CONTRIBUTING.md; [] reads none. (omitempty: a
	// configuration written back out keeps "unset" unset, as tools like the bench do.)
	Instructions []string `yaml:"instructions,omitempty"`
	// Setup is the repository's environment recipe (pipeline/envsetup): built in the sandbox
	// before the night's first ticket of the repository and cached by what it depends on;
	// its $ENV/bin/python runs the checks unless python: says otherwise. nil: none, the
	// checks use python: or the interpreter they find.
	Setup *envsetup.Recipe `yaml:"setup,omitempty"`
	// PushRemote is the git remote (of the clone at Path) that fix branches and kept
	// attempt branches are pushed to, so they do not stay on one machine's disk; empty:
	// they stay in the clone.
	PushRemote string `yaml:"push_remote"`
	// PushTokenEnv names the variable holding push_remote's credential for an https remote
	// ("TOKEN", sent as x-access-token, or "USER:TOKEN"), sent in a header: never put one in
	// the remote's URL, which every git process of the clone can read.
	PushTokenEnv string `yaml:"push_token_env"`
	// AllowPaths are protected paths the maker's tools may write in this repository and
	// its fix branches may hold (see tools.ProtectedPath: CI and hook configuration,
	// editor folders, .gitattributes, .gitmodules, dependency manifests and lockfiles,
	// modules named like a check's tool, bytecode): a path, a folder ending in "/", or a
	// pattern like .github/workflows/*.yml. Empty: none.
	AllowPaths []string `yaml:"allow_paths,omitempty"`
}

// Log selects the log format ("text": tint, coloured only on a terminal; "json") and level.
type Log struct {
	Format string `yaml:"format"`
	Level  string `yaml:"level"`
}

// Defaults used where the file leaves a field out.
const (
	DefaultWorkers      = 3
	DefaultLease        = 60 * time.Second
	DefaultHeartbeat    = 10 * time.Second
	DefaultMaxAttempts  = 3
	DefaultRetryBackoff = 30 * time.Second
	DefaultWindow       = 6 * time.Hour
	DefaultGrace        = 10 * time.Minute
	DefaultMaxRescues   = 5
	DefaultPoll         = 2 * time.Second
	// Per-attempt budget defaults: the point past which, in the seed team's sweep, success
	// stopped rising while cost kept growing (12 maker steps, 200k tokens, 300 s).
	DefaultMaxSteps    = 12
	DefaultMaxTokens   = 200_000
	DefaultWallClock   = 300 * time.Second
	DefaultCompactAt   = 0.70
	DefaultSchedule    = "0 1 * * *"
	DefaultMaxWorktree = ByteSize(validate.DefaultMaxWorktreeSize)
	// max_check_memory's and max_check_processes' defaults are 0: the sandbox's, which grow
	// with the CPUs (sandbox.DefaultMemoryLimit, sandbox.DefaultProcessLimit).
	// Lower bounds of max_check_memory and max_check_processes: below them a Python test
	// run cannot start.
	minCheckMemory    = 64 << 20
	minCheckProcesses = 16
	// DefaultMaxTransportReleases bounds transport releases of one ticket per night.
	DefaultMaxTransportReleases = 3
	// DefaultMaxQuestions: one question per ticket. A second ask is refused: a maker that
	// keeps asking is a maker that should decide.
	DefaultMaxQuestions = 1
	// MaxMaxQuestions bounds budget.max_questions.
	MaxMaxQuestions = 5
)

// Default returns a configuration with every default filled in and no repositories. Parse
// decodes the file over it, so a key the file leaves out keeps its default.
func Default() Config {
	return Config{
		Store: Store{Synchronous: "NORMAL"},
		Night: Night{
			Schedule:     DefaultSchedule,
			Window:       DefaultWindow,
			Grace:        DefaultGrace,
			MaxRescues:   DefaultMaxRescues,
			Workers:      DefaultWorkers,
			Lease:        DefaultLease,
			Heartbeat:    DefaultHeartbeat,
			MaxAttempts:  DefaultMaxAttempts,
			RetryBackoff: DefaultRetryBackoff,
			Poll:         DefaultPoll,

			MaxTransportReleases: DefaultMaxTransportReleases,
		},
		Budget: Budget{MaxSteps: DefaultMaxSteps, MaxTokens: DefaultMaxTokens, WallClock: DefaultWallClock,
			CompactAt: DefaultCompactAt, MaxQuestions: DefaultMaxQuestions},
		Workspace: "work",
		Output:    "results",
		Log:       Log{Format: "text", Level: "info"},
		Sandbox:   sandbox.ModeBwrap,

		MaxWorktreeSize: DefaultMaxWorktree,
		GitHub:          defaultGitHub(),
		Duplicates:      defaultDuplicates(),
		Review:          Review{MaxRounds: DefaultMaxRounds},
	}
}

// applyRepoDefaults fills the defaults inside map entries, which decoding cannot pre-fill.
func (c *Config) applyRepoDefaults() {
	for name, r := range c.Repos {
		if r.BaseRef == "" {
			r.BaseRef = "HEAD"
		}
		for i := range r.Checks {
			if r.Checks[i].Name == "" {
				r.Checks[i].Name = r.Checks[i].Kind
			}
			r.Checks[i].PassEnv = r.PassEnv
			if r.Checks[i].Python == "" {
				r.Checks[i].Python = r.Python
			}
		}
		c.Repos[name] = r
	}
}

// Load reads, defaults, resolves and validates the configuration file at path.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w (pass --config FILE, or copy the repository's config.yaml)", err)
	}
	return Parse(path, data)
}

// Parse decodes data strictly; name is used in error messages and to resolve relative paths.
func Parse(name string, data []byte) (Config, error) {
	// Decoding over the defaults keeps an explicit zero (workers: 0) as zero, so validation
	// can reject it instead of silently replacing it with the default.
	c := Default()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Config{}, syntaxError(name, data, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	// A value of the wrong type or an unknown key does not stop the decoding: the rest of
	// the file is decoded and validated too, so every mistake is reported at once.
	var decodeErr error
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		decodeErr = explain(name, &root, err)
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return Config{}, decodeErr
		}
	}
	if err := extraDocument(name, data, dec); err != nil {
		decodeErr = errors.Join(decodeErr, err)
	}
	if errs := fractions(name, &root, reflect.TypeFor[Config](), ""); len(errs) > 0 {
		decodeErr = errors.Join(append([]error{decodeErr}, errs...)...)
	}
	c.File = name
	if c.Store.Path == "" && !c.Store.Shared() {
		c.Store.Path = DefaultStorePath
	}
	c.applyRepoDefaults()
	c.applyGitHubDefaults()
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	if c.BaseDir != "" {
		if !filepath.IsAbs(c.BaseDir) {
			c.BaseDir = filepath.Join(dir, c.BaseDir)
		}
		c.BaseDir = filepath.Clean(c.BaseDir)
		if fi, err := os.Stat(c.BaseDir); err != nil || !fi.IsDir() {
			return Config{}, errors.Join(decodeErr, locate(name, &root, fmt.Errorf("base_dir: %s is not a folder (%v); create it (install -d -o ticketd -g ticketd %s) or fix the path", c.BaseDir, statErr(fi, err), c.BaseDir)))
		}
		dir = c.BaseDir
	} else {
		c.BaseDir = dir
	}
	c.resolvePaths(dir)
	if err := c.Validate(); err != nil {
		return Config{}, errors.Join(decodeErr, locate(name, &root, err))
	}
	if decodeErr != nil {
		return Config{}, decodeErr
	}
	return c, nil
}

// extraDocument refuses a second YAML document after a "---" line: the decoder reads the
// first one only, so the settings below it would be ignored without a word. An empty one
// (a trailing "---") is harmless.
func extraDocument(name string, data []byte, dec *yaml.Decoder) error {
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return syntaxError(name, data, err)
		case len(doc.Content) > 0 && doc.Content[0].Tag != "!!null":
			return fmt.Errorf("%s:%d: a second YAML document starts at this \"---\" line: ticketd reads the first one only, so every setting below it would be ignored; delete the line to make one document", name, doc.Line)
		}
	}
}

func (c *Config) resolvePaths(dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	c.Store.Path = abs(c.Store.Path)
	c.Workspace = abs(c.Workspace)
	c.Output = abs(c.Output)
	for i := range c.Intake {
		c.Intake[i].Path = abs(c.Intake[i].Path)
	}
	for name, r := range c.Repos {
		r.Path = abs(r.Path)
		if r.Setup != nil {
			// With a recipe, an unset python: is its environment's, known at night; the
			// operator's .venv is not looked for.
			if r.Python != "" {
				r.Python = repoPython(r.Path, r.Python)
			}
			for i := range r.Checks {
				if r.Checks[i].Python != "" {
					r.Checks[i].Python = repoPython(r.Path, r.Checks[i].Python)
				}
			}
			c.Repos[name] = r
			continue
		}
		r.Python = repoPython(r.Path, r.Python)
		for i := range r.Checks {
			r.Checks[i].Python = repoPython(r.Path, r.Checks[i].Python)
		}
		c.Repos[name] = r
	}
}

// repoPython resolves a repository's interpreter against its own checkout, the one the
// operator set up: a relative python: (".venv/bin/python") names the repository's
// virtualenv, not a file in a worktree, where a gitignored .venv does not exist and any
// file could be written by the code under test. Empty means the repository's
// .venv/bin/python when there is one; otherwise the checks find a python3 that has the tool.
func repoPython(repoPath, python string) string {
	switch {
	case python == "":
		venv := filepath.Join(repoPath, ".venv", "bin", "python")
		if fi, err := os.Stat(venv); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return venv
		}
		return ""
	case filepath.IsAbs(python) || !strings.ContainsRune(python, '/'):
		return python // absolute, or a name looked up on PATH
	}
	return filepath.Join(repoPath, python)
}

// Validate checks ranges and references; each error names the key, the value and a fix.
// All problems are reported at once, in the order of the file's sections.
func (c Config) Validate() error {
	var p problems
	p.night(c.Night)
	p.budget(c.Budget)
	p.review(c.Review)
	p.store(c)
	c.Duplicates.validate(p.add)
	c.Notify.validate(p.add)
	p.enums(c)
	p.intake(c)
	for _, name := range slices.Sorted(maps.Keys(c.Repos)) {
		p.repo(name, c.Repos[name])
	}
	p.sandbox(c)
	creds := c.credentialOwners()
	for _, name := range slices.Sorted(maps.Keys(c.Repos)) {
		p.repoEnv(name, c.Repos[name], creds)
	}
	p.github(c)
	if err := c.Models.Validate(); err != nil {
		p = append(p, err)
	}
	return errors.Join(p...)
}

// problems collects every finding of Validate, so that an operator fixes a config in one
// pass instead of one error per restart.
type problems []error

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Errorf(format, args...)) }

// night checks the night section: its workers, lease, heartbeat and schedule.
func (p *problems) night(n Night) {
	if n.Workers < 1 || n.Workers > 64 {
		p.add("night.workers: must be 1..64, got %d", n.Workers)
	}
	if n.Lease < 5*time.Second {
		p.add("night.lease: must be at least 5s, got %s", n.Lease)
	}
	if n.Heartbeat <= 0 || n.Heartbeat > n.Lease/3 {
		p.add("night.heartbeat: must be positive and at most a third of night.lease (%s), got %s", n.Lease, n.Heartbeat)
	}
	if n.Heartbeat > 15*time.Second {
		p.add("night.heartbeat: must be at most 15s so a cancelled ticket stops spending quickly, got %s", n.Heartbeat)
	}
	if n.MaxAttempts < 1 || n.MaxAttempts > 20 {
		p.add("night.max_attempts: must be 1..20, got %d", n.MaxAttempts)
	}
	if _, err := cron.ParseStandard(n.Schedule); err != nil {
		p.add("night.schedule: %q is not a cron schedule (%v); use five fields such as \"0 1 * * *\", or @daily / @hourly / @every 6h", n.Schedule, err)
	}
	if n.Window <= 0 {
		p.add("night.window: must be positive, got %s", n.Window)
	}
	if n.RetryBackoff <= 0 {
		p.add("night.retry_backoff: must be positive (the first retry's delay, such as 30s), got %s", n.RetryBackoff)
	}
	if n.Poll < minPoll {
		p.add("night.poll: must be at least %s (an idle worker asks the queue this often), got %s", minPoll, n.Poll)
	}
	p.nightLimits(n)
}

// minPoll bounds night.poll from below: shorter, idle workers would spin on the database.
const minPoll = 10 * time.Millisecond

// nightLimits checks how far a night goes: rescues, grace, transport releases and dollars.
func (p *problems) nightLimits(n Night) {
	if n.MaxRescues < 1 || n.MaxRescues > 100 {
		p.add("night.max_rescues: must be 1..100, got %d", n.MaxRescues)
	}
	if n.Grace < 0 {
		p.add("night.grace: must be >= 0 (0 stops running attempts when the window closes), got %s", n.Grace)
	}
	if n.MaxTransportReleases < 1 {
		p.add("night.max_transport_releases: must be at least 1, got %d", n.MaxTransportReleases)
	}
	if n.MaxDollars < 0 {
		p.add("night.max_dollars: must be >= 0 (0 means no limit), got %g", n.MaxDollars)
	}
}

// budget checks the per-attempt limits.
func (p *problems) budget(b Budget) {
	if b.MaxSteps < 1 {
		p.add("budget.max_steps: must be >= 1, got %d", b.MaxSteps)
	}
	if b.MaxTokens < 1000 {
		p.add("budget.max_tokens: must be >= 1000, got %d", b.MaxTokens)
	}
	if b.WallClock < time.Second {
		p.add("budget.wall_clock: must be >= 1s, got %s", b.WallClock)
	}
	if b.MaxDollars < 0 {
		p.add("budget.max_dollars: must be >= 0 (0 means no per-attempt limit), got %g", b.MaxDollars)
	}
	if b.CompactAt <= 0.1 || b.CompactAt >= 1 {
		p.add("budget.compact_at: must be a share of the context window between 0.1 and 1, such as 0.7; got %g", b.CompactAt)
	}
	if b.MaxQuestions < 0 || b.MaxQuestions > MaxMaxQuestions {
		p.add("budget.max_questions: must be 0..%d (0 never asks a human), got %d", MaxMaxQuestions, b.MaxQuestions)
	}
}

// review checks that each reviewer angle is known and listed once.
func (p *problems) review(r Review) {
	if r.MaxRounds < 1 || r.MaxRounds > MaxMaxRounds {
		p.add("review.max_rounds: must be 1..%d (rounds of work a done fix gets after a review or a note; then a human), got %d", MaxMaxRounds, r.MaxRounds)
	}
	seenAngle := map[string]bool{}
	for i, rv := range r.Reviewers {
		if seenAngle[rv.Angle] {
			p.add("review.reviewers[%d].angle: %q is listed twice; list each angle once", i, rv.Angle)
		}
		seenAngle[rv.Angle] = true
		if _, err := pipeline.NewReviewer(rv.Angle, rv.Paths, rv.Touches); err != nil {
			p.add("review.reviewers[%d]: %v", i, err)
		}
	}
}

// enums checks the keys that take one of a few words.
func (p *problems) enums(c Config) {
	if s := strings.ToUpper(c.Store.Synchronous); s != "NORMAL" && s != "FULL" {
		p.add("store.synchronous: %s", oneOf(c.Store.Synchronous, "NORMAL", "FULL"))
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		p.add("log.format: %s", oneOf(c.Log.Format, "text", "json"))
	}
	if levels := []string{"debug", "info", "warn", "error"}; !slices.Contains(levels, c.Log.Level) {
		p.add("log.level: %s", oneOf(c.Log.Level, levels...))
	}
	if !slices.Contains([]string{"", "gate", "advisory"}, c.Judge) {
		p.add("judge: %s", oneOf(c.Judge, "gate", "advisory"))
	}
}

// intake checks each intake source and the repository it feeds.
func (p *problems) intake(c Config) {
	for i, s := range c.Intake {
		if s.Kind != "dir" {
			p.add("intake[%d].kind: %s", i, oneOf(s.Kind, "dir"))
		}
		if s.Path == "" {
			p.add("intake[%d].path: required (a folder of *.md issue files)", i)
		}
		if _, ok := c.Repos[s.Repo]; s.Repo != "" && !ok {
			p.add("intake[%d].repo: %q is not defined under repos%s (have: %s)", i, s.Repo, spell.Hint(s.Repo, slices.Sorted(maps.Keys(c.Repos))), keys(c.Repos))
		}
	}
}

// repo checks one repos entry: its path, instruction files, allowed paths and checks.
func (p *problems) repo(name string, r Repo) {
	if r.Path == "" {
		p.add("repos.%s.path: required (a local git repository)", name)
	}
	for j, f := range r.Instructions {
		if !isRepoRelative(f) {
			p.add("repos.%s.instructions[%d]: %q must be a file path relative to the repository root, like AGENTS.md or docs/agents.md", name, j, f)
		}
	}
	for j, pat := range r.AllowPaths {
		if err := tools.CheckAllowPattern(pat); err != nil {
			p.add("repos.%s.allow_paths[%d]: %v", name, j, err)
		}
	}
	for j, ch := range r.Checks {
		p.check(fmt.Sprintf("repos.%s.checks[%d]", name, j), ch)
	}
}

// isRepoRelative reports whether f names a file inside the repository and outside .git.
func isRepoRelative(f string) bool {
	clean := path.Clean(f)
	return f != "" && !path.IsAbs(f) && clean != ".." && !strings.HasPrefix(clean, "../") &&
		!strings.Contains(f, "\\") && clean != ".git" && !strings.HasPrefix(clean, ".git/")
}

// checkKinds are the kinds of repos.*.checks, in the order the error message lists them.
var checkKinds = []string{"pytest", "unittest", "ruff", "mypy", "python", "command"}

// check checks one repos.*.checks entry; at is its config path.
func (p *problems) check(at string, ch validate.Check) {
	if !slices.Contains(checkKinds, ch.Kind) {
		p.add("%s.kind: %s", at, oneOf(ch.Kind, checkKinds...))
	}
	if (ch.Kind == "command" || ch.Kind == "python") && len(ch.Command) == 0 {
		p.add("%s.command: required for kind %q", at, ch.Kind)
	}
	if ch.Timeout < 0 {
		p.add("%s.timeout: must be >= 0, got %s", at, ch.Timeout)
	}
	if ch.FullSuite != "" && !slices.Contains(validate.FullSuiteModes, ch.FullSuite) {
		p.add("%s.full_suite: %s", at, oneOf(ch.FullSuite, validate.FullSuiteModes[1:]...))
	}
	for _, k := range slices.Sorted(maps.Keys(ch.Env)) {
		if !envName.MatchString(k) {
			p.add("%s.env: %q is not an environment variable name (letters, digits and _, not starting with a digit)", at, k)
		}
	}
}

// sandbox checks how the code under test is isolated and how big its worktree may grow.
func (p *problems) sandbox(c Config) {
	if err := c.Sandbox.Valid(); err != nil || c.Sandbox == "" {
		p.add("sandbox: must be bwrap (isolate the code under test; needs bubblewrap) or none (no isolation), got %q%s", string(c.Sandbox), spell.Hint(string(c.Sandbox), []string{"bwrap", "none"}))
	}
	for i, sp := range c.SandboxPaths {
		if !filepath.IsAbs(sp) || filepath.Clean(sp) == "/" {
			p.add("sandbox_paths[%d]: must be an absolute path other than /, got %q", i, sp)
		}
	}
	if u := c.SandboxUser; u != "" && (u == "root" || u == "0" || strings.ContainsAny(u, " \t:/")) {
		p.add("sandbox_user: must name an unprivileged user (e.g. ticketd-check), got %q", u)
	}
	if c.MaxWorktreeSize < 1<<20 {
		p.add("max_worktree_size: must be at least 1MiB, got %d bytes; write it like 1GiB or 512MiB", int64(c.MaxWorktreeSize))
	}
	if c.MaxCheckMemory != 0 && c.MaxCheckMemory < minCheckMemory {
		p.add("max_check_memory: must be 0 (4GiB, or 256MiB per CPU where that is more) or at least 64MiB (what one process of a check may allocate), got %d bytes; write it like 8GiB or 512MiB", int64(c.MaxCheckMemory))
	}
	if c.MaxCheckProcesses != 0 && c.MaxCheckProcesses < minCheckProcesses {
		p.add("max_check_processes: must be 0 (4096, or twice the CPUs squared where that is more) or at least %d (the processes and threads a check may run at once), got %d", minCheckProcesses, c.MaxCheckProcesses)
	}
}

// repoEnv checks what a repository's setup recipe and checks receive from the environment:
// creds maps each credential of ticketd to its owner, and none may be passed.
func (p *problems) repoEnv(name string, r Repo, creds map[string]string) {
	if s := r.Setup; s != nil {
		if err := s.Validate(); err != nil {
			p.add("repos.%s.setup.%v", name, err)
		}
		p.passEnv("repos."+name+".setup.pass_env", s.PassEnv, creds)
	}
	p.passEnv("repos."+name+".pass_env", r.PassEnv, creds)
}

// passEnv checks one pass_env list; at is its config path.
func (p *problems) passEnv(at string, vars []string, creds map[string]string) {
	for j, v := range vars {
		if !envName.MatchString(v) {
			p.add("%s[%d]: %q is not an environment variable name", at, j, v)
		}
		if owner, ok := creds[v]; ok {
			p.add("%s[%d]: %s is %s; a credential of ticketd never enters the sandbox", at, j, v, owner)
		}
	}
}

// store checks the store section, the node name and each repository's push settings: what
// several nodes sharing one store must agree on.
func (p *problems) store(c Config) {
	st := c.Store
	set := 0
	for _, v := range []string{st.Path, st.URL, st.URLEnv} {
		if v != "" {
			set++
		}
	}
	switch {
	case set == 0:
		p.add("store: set path (a SQLite file, default %s) or url_env (the variable holding a PostgreSQL URL)", DefaultStorePath)
	case set > 1:
		p.add("store: set one of path (SQLite), url_env or url (PostgreSQL), got %d of them", set)
	}
	if st.URLEnv != "" && !envName.MatchString(st.URLEnv) {
		p.add("store.url_env: %q is not an environment variable name (e.g. TICKETD_DB_URL)", st.URLEnv)
	}
	if st.URL != "" {
		p.storeURL(st.URL)
	}
	if c.Node != "" && !nodeName.MatchString(c.Node) {
		p.add("node: %q: want letters, digits, '.', '_' and '-' (at most 64), like vm-2", c.Node)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Repos)) {
		p.push(name, c.Repos[name])
	}
}

// storeURL checks store.url: a PostgreSQL URL without a password in it.
func (p *problems) storeURL(raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql"):
		p.add("store.url: want postgres://user@host:5432/database, got %q", raw)
	case hasPassword(u):
		p.add("store.url: holds a password; secrets never go in this file: export the URL in a variable and name it in store.url_env")
	}
}

// push checks where a repository's branches are pushed and with which credential.
func (p *problems) push(name string, r Repo) {
	if r.PushRemote != "" && !remoteName.MatchString(r.PushRemote) {
		p.add("repos.%s.push_remote: %q is not a git remote name (like origin)", name, r.PushRemote)
	}
	if v := r.PushTokenEnv; v != "" && !envName.MatchString(v) {
		p.add("repos.%s.push_token_env: %q is not an environment variable name (e.g. APP_PUSH_TOKEN)", name, v)
	}
}

func hasPassword(u *url.URL) bool {
	if _, ok := u.User.Password(); ok {
		return true
	}
	return u.Query().Has("password")
}

var (
	nodeName   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	remoteName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// Credentials names every environment variable ticketd reads a secret from: each endpoint's
// api_key_env and header_env values, github.token_env and store.url_env. None of them reaches a check, even
// when a repository's pass_env names it.
func (c Config) Credentials() []string {
	return slices.Sorted(maps.Keys(c.credentialOwners()))
}

// credentialOwners maps each credential variable to what uses it, for error messages.
func (c Config) credentialOwners() map[string]string {
	owners := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(c.Models.Endpoints)) {
		ep := c.Models.Endpoints[name]
		if ep.APIKeyEnv != "" {
			owners[ep.APIKeyEnv] = "the API key of models.endpoints." + name
		}
		for _, h := range slices.Sorted(maps.Keys(ep.HeaderEnv)) {
			if v := ep.HeaderEnv[h]; v != "" {
				owners[v] = fmt.Sprintf("the %s header of models.endpoints.%s (header_env)", h, name)
			}
		}
	}
	tokenEnv := c.GitHub.TokenEnv
	if tokenEnv == "" {
		tokenEnv = DefaultGitHubTokenEnv
	}
	owners[tokenEnv] = "the GitHub token (github.token_env)"
	if c.Store.URLEnv != "" {
		owners[c.Store.URLEnv] = "the PostgreSQL URL of the store (store.url_env)"
	}
	for _, name := range slices.Sorted(maps.Keys(c.Repos)) {
		if v := c.Repos[name].PushTokenEnv; v != "" {
			owners[v] = "the push credential of repos." + name + " (push_token_env)"
		}
	}
	return owners
}

func statErr(fi os.FileInfo, err error) string {
	if err != nil {
		return err.Error()
	}
	return fi.Mode().Type().String() + ", not a directory"
}

// oneOf says a value is not one of the allowed ones, and which it may have meant.
func oneOf(got string, allowed ...string) string {
	list := strings.Join(allowed, " or ")
	if len(allowed) > 2 {
		list = strings.Join(allowed[:len(allowed)-1], ", ") + " or " + allowed[len(allowed)-1]
	}
	return fmt.Sprintf("must be %s, got %q%s", list, got, spell.Hint(got, allowed))
}

func keys[V any](m map[string]V) string {
	k := slices.Sorted(maps.Keys(m))
	if len(k) == 0 {
		return "none"
	}
	return strings.Join(k, ", ")
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
