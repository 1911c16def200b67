package config

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/envsetup"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// TestValidateMessages pins every message of Config.Validate word for word, and their
// order: operators grep for them and the docs quote them, so a restructuring of Validate
// must not change a byte.
func TestValidateMessages(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   []string // every line of the joined error, in order
	}{
		{"night numbers", func(c *Config) {
			c.Night.Workers, c.Night.Lease, c.Night.Heartbeat, c.Night.MaxAttempts = 0, time.Second, 0, 21
			c.Night.Window, c.Night.MaxRescues, c.Night.Grace = 0, 0, -time.Second
			c.Night.MaxTransportReleases, c.Night.MaxDollars = 0, -1
		}, []string{
			"night.workers: must be 1..64, got 0",
			"night.lease: must be at least 5s, got 1s",
			"night.heartbeat: must be positive and at most a third of night.lease (1s), got 0s",
			"night.max_attempts: must be 1..20, got 21",
			"night.window: must be positive, got 0s",
			"night.max_rescues: must be 1..100, got 0",
			"night.grace: must be >= 0 (0 stops running attempts when the window closes), got -1s",
			"night.max_transport_releases: must be at least 1, got 0",
			"night.max_dollars: must be >= 0 (0 means no limit), got -1",
		}},
		{"night waits", func(c *Config) { c.Night.RetryBackoff, c.Night.Poll = -5*time.Second, 0 }, []string{
			"night.retry_backoff: must be positive (the first retry's delay, such as 30s), got -5s",
			"night.poll: must be at least 10ms (an idle worker asks the queue this often), got 0s",
		}},
		{"night waits, zero backoff and a poll under the floor", func(c *Config) { c.Night.RetryBackoff, c.Night.Poll = 0, time.Millisecond }, []string{
			"night.retry_backoff: must be positive (the first retry's delay, such as 30s), got 0s",
			"night.poll: must be at least 10ms (an idle worker asks the queue this often), got 1ms",
		}},
		{"heartbeat too long", func(c *Config) { c.Night.Lease, c.Night.Heartbeat = time.Hour, 16*time.Second }, []string{
			"night.heartbeat: must be at most 15s so a cancelled ticket stops spending quickly, got 16s",
		}},
		{"schedule", func(c *Config) { c.Night.Schedule = "every night" }, []string{
			"night.schedule: \"every night\" is not a cron schedule (expected exactly 5 fields, found 2: [every night]); use five fields such as \"0 1 * * *\", or @daily / @hourly / @every 6h",
		}},
		{"budget", func(c *Config) {
			c.Budget.MaxSteps, c.Budget.MaxTokens, c.Budget.WallClock = 0, 999, time.Millisecond
			c.Budget.MaxDollars, c.Budget.CompactAt, c.Budget.MaxQuestions = -1, 0.1, 6
		}, []string{
			"budget.max_steps: must be >= 1, got 0",
			"budget.max_tokens: must be >= 1000, got 999",
			"budget.wall_clock: must be >= 1s, got 1ms",
			"budget.max_dollars: must be >= 0 (0 means no per-attempt limit), got -1",
			"budget.compact_at: must be a share of the context window between 0.1 and 1, such as 0.7; got 0.1",
			"budget.max_questions: must be 0..5 (0 never asks a human), got 6",
		}},
		{"reviewers", func(c *Config) {
			c.Review.Reviewers = []Reviewer{{Angle: "security"}, {Angle: "security"}, {Angle: "nonsense"}}
		}, []string{
			"review.reviewers[1].angle: \"security\" is listed twice; list each angle once",
			"review.reviewers[2]: angle \"nonsense\": want one of correctness, security, performance",
		}},
		{"no store", func(c *Config) { c.Store = Store{Synchronous: "NORMAL"} }, []string{
			"store: set path (a SQLite file, default ticketd.db) or url_env (the variable holding a PostgreSQL URL)",
		}},
		{"two stores", func(c *Config) { c.Store.URLEnv, c.Store.URL = "1BAD", "mysql://x/y" }, []string{
			"store: set one of path (SQLite), url_env or url (PostgreSQL), got 3 of them",
			"store.url_env: \"1BAD\" is not an environment variable name (e.g. TICKETD_DB_URL)",
			"store.url: want postgres://user@host:5432/database, got \"mysql://x/y\"",
		}},
		{"store password", func(c *Config) { c.Store = Store{URL: "postgres://u:pw@h/db", Synchronous: "full"} }, []string{
			"store.url: holds a password; secrets never go in this file: export the URL in a variable and name it in store.url_env",
		}},
		{"store password query", func(c *Config) { c.Store = Store{URL: "postgres://u@h/db?password=x", Synchronous: "FULL"} }, []string{
			"store.url: holds a password; secrets never go in this file: export the URL in a variable and name it in store.url_env",
		}},
		{"node and push", func(c *Config) {
			c.Node = "-vm"
			r := c.Repos["app"]
			r.PushRemote, r.PushTokenEnv = "-origin", "A-B"
			c.Repos["app"] = r
		}, []string{
			"node: \"-vm\": want letters, digits, '.', '_' and '-' (at most 64), like vm-2",
			"repos.app.push_remote: \"-origin\" is not a git remote name (like origin)",
			"repos.app.push_token_env: \"A-B\" is not an environment variable name (e.g. APP_PUSH_TOKEN)",
		}},
		{"enums", func(c *Config) {
			c.Store.Synchronous, c.Log.Format, c.Log.Level, c.Judge = "OFF", "jsn", "verbose", "gat"
		}, []string{
			"store.synchronous: must be NORMAL or FULL, got \"OFF\"",
			"log.format: must be text or json, got \"jsn\" (did you mean json?)",
			"log.level: must be debug, info, warn or error, got \"verbose\"",
			"judge: must be gate or advisory, got \"gat\" (did you mean gate?)",
		}},
		{"intake", func(c *Config) {
			c.Intake = []Source{{Kind: "github", Repo: "ap"}, {Kind: "dir", Path: "x", Repo: "app"}}
		}, []string{
			"intake[0].kind: must be dir, got \"github\"",
			"intake[0].path: required (a folder of *.md issue files)",
			"intake[0].repo: \"ap\" is not defined under repos (did you mean app?) (have: app)",
		}},
		{"repo fields", func(c *Config) {
			r := c.Repos["app"]
			r.Path = ""
			r.Instructions = []string{"", "/abs", "..", "../x", `a\b`, ".git", ".git/config", "docs/agents.md"}
			r.AllowPaths = []string{"[", "src/**"}
			c.Repos["app"] = r
		}, []string{
			"repos.app.path: required (a local git repository)",
			"repos.app.instructions[0]: \"\" must be a file path relative to the repository root, like AGENTS.md or docs/agents.md",
			"repos.app.instructions[1]: \"/abs\" must be a file path relative to the repository root, like AGENTS.md or docs/agents.md",
			"repos.app.instructions[2]: \"..\" must be a file path relative to the repository root, like AGENTS.md or docs/agents.md",
			"repos.app.instructions[3]: \"../x\" must be a file path relative to the repository root, like AGENTS.md or docs/agents.md",
			"repos.app.instructions[4]: \"a\\\\b\" must be a file path relative to the repository root, like AGENTS.md or docs/agents.md",
			"repos.app.instructions[5]: \".git\" must be a file path relative to the repository root, like AGENTS.md or docs/agents.md",
			"repos.app.instructions[6]: \".git/config\" must be a file path relative to the repository root, like AGENTS.md or docs/agents.md",
			"repos.app.allow_paths[0]: \"[\" is not a valid pattern: syntax error in pattern",
		}},
		{"checks", func(c *Config) {
			r := c.Repos["app"]
			r.Checks = []validate.Check{
				{Kind: "pytst"}, {Kind: "command"}, {Kind: "python", Timeout: -time.Second},
				{Kind: "ruff", Env: map[string]string{"B AD": "x", "1X": "y", "OK": "z"}},
			}
			c.Repos["app"] = r
		}, []string{
			"repos.app.checks[0].kind: must be pytest, unittest, ruff, mypy, python or command, got \"pytst\" (did you mean pytest?)",
			"repos.app.checks[1].command: required for kind \"command\"",
			"repos.app.checks[2].command: required for kind \"python\"",
			"repos.app.checks[2].timeout: must be >= 0, got -1s",
			"repos.app.checks[3].env: \"1X\" is not an environment variable name (letters, digits and _, not starting with a digit)",
			"repos.app.checks[3].env: \"B AD\" is not an environment variable name (letters, digits and _, not starting with a digit)",
		}},
		{"sandbox", func(c *Config) {
			c.Sandbox, c.SandboxPaths, c.SandboxUser, c.MaxWorktreeSize = "docker", []string{"rel", "/", "/opt"}, "root", 1<<20-1
		}, []string{
			"sandbox: must be bwrap (isolate the code under test; needs bubblewrap) or none (no isolation), got \"docker\"",
			"sandbox_paths[0]: must be an absolute path other than /, got \"rel\"",
			"sandbox_paths[1]: must be an absolute path other than /, got \"/\"",
			"sandbox_user: must name an unprivileged user (e.g. ticketd-check), got \"root\"",
			"max_worktree_size: must be at least 1MiB, got 1048575 bytes; write it like 1GiB or 512MiB",
		}},
		{"sandbox empty and user forms", func(c *Config) { c.Sandbox, c.SandboxUser = "", "a:b" }, []string{
			"sandbox: must be bwrap (isolate the code under test; needs bubblewrap) or none (no isolation), got \"\"",
			"sandbox_user: must name an unprivileged user (e.g. ticketd-check), got \"a:b\"",
		}},
		{"setup and pass_env", func(c *Config) {
			r := c.Repos["app"]
			r.Setup = &envsetup.Recipe{PassEnv: []string{"1X", "GITHUB_TOKEN"}}
			r.PassEnv = []string{"A=B", "GITHUB_TOKEN"}
			c.Repos["app"] = r
		}, []string{
			"repos.app.setup.commands: at least one is required, e.g. [\"\\\"$PYTHON\\\" -m venv \\\"$ENV\\\"\", \"\\\"$ENV/bin/pip\\\" install -e '.[test]'\"]",
			"repos.app.setup.pass_env[0]: \"1X\" is not an environment variable name",
			"repos.app.setup.pass_env[1]: GITHUB_TOKEN is the GitHub token (github.token_env); a credential of ticketd never enters the sandbox",
			"repos.app.pass_env[0]: \"A=B\" is not an environment variable name",
			"repos.app.pass_env[1]: GITHUB_TOKEN is the GitHub token (github.token_env); a credential of ticketd never enters the sandbox",
		}},
		{"setup pass_env only", func(c *Config) {
			r := c.Repos["app"]
			r.Setup = &envsetup.Recipe{Commands: []string{"true"}, PassEnv: []string{"1X", "GITHUB_TOKEN"}}
			c.Repos["app"] = r
		}, []string{
			"repos.app.setup.pass_env[0]: \"1X\" is not an environment variable name",
			"repos.app.setup.pass_env[1]: GITHUB_TOKEN is the GitHub token (github.token_env); a credential of ticketd never enters the sandbox",
		}},
		{"github", func(c *Config) {
			c.GitHub.TokenEnv, c.GitHub.APIURL, c.GitHub.Poll, c.GitHub.Watch = "1X", "http://example.com/", 0, 0
			c.GitHub.MinRateRemaining, c.GitHub.AllowAuthors = -1, []string{"ok", "-bad-"}
			c.GitHub.Output.Enabled = true
			c.GitHub.Repos = []GitHubRepo{
				{Name: "a/b", Repo: "app", Label: "x,y", PushURL: "http://example.com/a/b.git", Base: "-x"},
				{Name: "A/B", Repo: "nope"},
				{Name: "nope", Repo: "app", PushURL: "https://github.com/x/y.git"},
			}
			c.HTTP.Addr = "0.0.0.0:8377"
		}, []string{
			"github.token_env: must name an environment variable (such as GITHUB_TOKEN), got \"1X\"",
			"github.api_url: want an https URL such as https://api.github.com/ (plain http only on loopback), got \"http://example.com/\"",
			"github.poll: must be at least 1s, got 0s",
			"github.watch: must be positive and at most 15s so a closed issue stops spending quickly, got 0s",
			"github.min_rate_remaining: must be >= 0, got -1",
			"github.allow_authors[1]: \"-bad-\" is not a GitHub login",
			"github.repos[0].label: \"x,y\" may not contain a comma or newline",
			"github.repos[0].push_url: \"http://example.com/a/b.git\" would send the token in clear text; use https",
			"github.repos[0].base: \"-x\" is not a branch name",
			"github.repos[1].name: \"A/B\" is listed twice",
			"github.repos[1].repo: \"nope\" is not defined under repos (have: app)",
			"github.repos[1].push_url: required when github.output.enabled (an https clone URL)",
			"github.repos[2].name: want OWNER/NAME, got \"nope\"",
			"http.addr: \"0.0.0.0:8377\" is not a loopback address; the status page has no authentication, so serve it on 127.0.0.1 or ::1 (put a proxy in front to share it)",
		}},
		{"github unslashed and no repos", func(c *Config) {
			c.GitHub.APIURL, c.GitHub.Watch, c.GitHub.Output.Enabled = "https://api.github.com", 16*time.Second, true
			c.HTTP.Addr = "localhost"
		}, []string{
			"github.api_url: must end with a slash, got \"https://api.github.com\"",
			"github.watch: must be positive and at most 15s so a closed issue stops spending quickly, got 16s",
			"github.output.enabled: needs at least one entry under github.repos",
			"http.addr: want HOST:PORT such as 127.0.0.1:8377, got \"localhost\"",
		}},
		{"models", func(c *Config) { delete(c.Models.Roles, "judge") }, []string{
			"models.roles.judge: missing; every role (triage, maker, checker, judge) needs an endpoint and a model",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("cfg.yaml", []byte(valid))
			if err != nil {
				t.Fatalf("Parse(valid): %v", err)
			}
			tt.mutate(&c)
			err = c.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want:\n%s", strings.Join(tt.want, "\n"))
			}
			if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Validate() lines:\n%#v\nwant:\n%#v", got, tt.want)
			}
		})
	}
}
