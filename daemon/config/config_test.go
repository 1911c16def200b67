package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestRootConfigParses keeps the repository's config.yaml complete and valid.
func TestRootConfigParses(t *testing.T) {
	path := filepath.Join("..", "..", "config.yaml")
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	if c.Night.Workers != 3 || c.Night.Lease != 60*time.Second || c.Budget.MaxSteps != DefaultMaxSteps || c.Budget.MaxTokens != DefaultMaxTokens || c.Budget.WallClock != DefaultWallClock {
		t.Errorf("defaults: workers %d lease %s max_steps %d", c.Night.Workers, c.Night.Lease, c.Budget.MaxSteps)
	}
	if !filepath.IsAbs(c.Store.Path) || filepath.Base(c.Store.Path) != "ticketd.db" {
		t.Errorf("store.path = %q, want an absolute path ending in ticketd.db", c.Store.Path)
	}
	if c.Models.Endpoints["openai"].APIKeyEnv != "OPENAI_API_KEY" {
		t.Errorf("api_key_env = %q", c.Models.Endpoints["openai"].APIKeyEnv)
	}
}

const valid = `
night:
  workers: 2
repos:
  app:
    path: ../app
    checks:
      - kind: pytest
intake:
  - kind: dir
    path: issues
    repo: app
models:
  endpoints:
    local: {base_url: "http://127.0.0.1:8080/v1"}
  roles:
    triage: {endpoint: local, model: m}
    maker: {endpoint: local, model: m}
    checker: {endpoint: local, model: m}
    judge: {endpoint: local, model: m}
`

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{name: "check env with a bad name", yaml: strings.Replace(valid, "      - kind: pytest", "      - kind: pytest\n        env: {\"bad name\": x}", 1),
			want: []string{`env: "bad name"`}},
		{name: "unknown key names file, line and key, and what it may have meant", yaml: strings.Replace(valid, "  workers: 2", "  wokers: 2", 1),
			want: []string{"cfg.yaml:3:", "night.wokers", `unknown key "wokers" (did you mean workers?)`, "the keys here are: schedule, window"}},
		{name: "unknown key in a repository", yaml: strings.Replace(valid, "    path: ../app", "    pth: ../app\n    path: ../app", 1),
			want: []string{"cfg.yaml:6: repos.app.pth", "(did you mean path?)"}},
		{name: "wrong type in plain words", yaml: strings.Replace(valid, "workers: 2", "workers: many", 1),
			want: []string{"cfg.yaml:3:", "night.workers", `want a whole number, got the text "many"`}},
		{name: "bad duration in plain words", yaml: valid + "budget:\n  wall_clock: soon\n",
			want: []string{"cfg.yaml:22:", "budget.wall_clock", `want a duration such as 30s, 5m or 1h30m, got the text "soon"`}},
		{name: "range, with its line", yaml: strings.Replace(valid, "workers: 2", "workers: 0", 1),
			want: []string{"cfg.yaml:3: night.workers: must be 1..64, got 0"}},
		{name: "unknown repo in intake", yaml: strings.Replace(valid, "    repo: app", "    repo: ap", 1),
			want: []string{`cfg.yaml:12: intake[0].repo: "ap" is not defined under repos (did you mean app?) (have: app)`}},
		{name: "bad check kind, with a suggestion", yaml: strings.Replace(valid, "kind: pytest", "kind: pytset", 1),
			want: []string{`cfg.yaml:8: repos.app.checks[0].kind: must be pytest, unittest, ruff, mypy, python or command, got "pytset" (did you mean pytest?)`}},
		{name: "undefined endpoint", yaml: strings.Replace(valid, "maker: {endpoint: local", "maker: {endpoint: locl", 1),
			want: []string{"cfg.yaml:18: models.roles.maker.endpoint", "(did you mean local?)"}},
		{name: "unknown role", yaml: strings.Replace(valid, "    judge: {endpoint: local, model: m}", "    judge: {endpoint: local, model: m}\n    makr: {endpoint: local, model: m}", 1),
			want: []string{"cfg.yaml:21: models.roles.makr: unknown role (did you mean maker?)"}},
		{name: "enum with a suggestion", yaml: valid + "log:\n  format: jsn\n",
			want: []string{`cfg.yaml:22: log.format: must be text or json, got "jsn" (did you mean json?)`}},
		{name: "not yaml", yaml: "night: [", want: []string{"cfg.yaml"}},
		{name: "bad schedule, with its line", yaml: strings.Replace(valid, "  workers: 2", "  workers: 2\n  schedule: \"@nightly\"", 1),
			want: []string{`cfg.yaml:4: night.schedule: "@nightly" is not a cron schedule`}},
		{name: "a size, with its line", yaml: valid + "max_worktree_size: huge\n", want: []string{`cfg.yaml:21: max_worktree_size: "huge" is not a size`}},
		{name: "a fraction where a whole number goes is not truncated", yaml: strings.Replace(valid, "workers: 2", "workers: 2.5", 1),
			want: []string{`cfg.yaml:3: night.workers: want a whole number, got the number "2.5"`}},
		{name: "a fraction in a mapping of whole numbers", yaml: valid + "priorities:\n  bug: 0.5\n",
			want: []string{`cfg.yaml:22: priorities.bug: want a whole number, got the number "0.5"`}},
		{name: "a poll of zero, with its line", yaml: strings.Replace(valid, "  workers: 2", "  workers: 2\n  poll: 0s", 1),
			want: []string{"cfg.yaml:4: night.poll: must be at least 10ms"}},
		{name: "a second document is not ignored", yaml: valid + "---\nnight:\n  workers: 0\n",
			want: []string{`cfg.yaml:21: a second YAML document starts at this "---" line`, "delete the line"}},
		{name: "a second document that is not yaml", yaml: valid + "---\nnight: [\n", want: []string{"cfg.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("cfg.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", tt.yaml)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			// Plain words: no Go type names reach the operator.
			for _, goWord := range []string{"time.Duration", "config.", "float64", "[]validate", "!!str"} {
				if strings.Contains(err.Error(), goWord) {
					t.Errorf("error %q speaks Go (%q)", err, goWord)
				}
			}
		})
	}
}

// TestParseAcceptsOddButValid: the markers that leave one document are fine, and so is a whole
// number written as a float.
func TestParseAcceptsOddButValid(t *testing.T) {
	for name, y := range map[string]string{
		"leading ---":               "---\n" + valid,
		"trailing ---":              valid + "---\n",
		"trailing --- and comment":  valid + "---\n# the end\n",
		"document end marker":       valid + "...\n",
		"a whole number as a float": valid + "budget:\n  max_tokens: 1.5e5\n",
	} {
		if _, err := Parse("cfg.yaml", []byte(y)); err != nil {
			t.Errorf("%s: Parse(%q): %v", name, y, err)
		}
	}
}

func TestParseResolvesPathsAndDefaults(t *testing.T) {
	c, err := Parse(filepath.Join("/etc/ticketd", "config.yaml"), []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ got, want string }{
		{c.Store.Path, "/etc/ticketd/ticketd.db"},
		{c.Repos["app"].Path, "/etc/app"},
		{c.Repos["app"].BaseRef, "HEAD"},
		{c.Repos["app"].Checks[0].Name, "pytest"},
		{c.Intake[0].Path, "/etc/ticketd/issues"},
		{c.Workspace, "/etc/ticketd/work"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if c.Night.MaxAttempts != DefaultMaxAttempts || c.Night.Heartbeat != DefaultHeartbeat {
		t.Errorf("defaults not applied: %+v", c.Night)
	}
	withEnv, err := Parse("cfg.yaml", []byte(strings.Replace(valid, "      - kind: pytest", "      - kind: pytest\n        env: {PYTHONPATH: lib}", 1)))
	if err != nil || withEnv.Repos["app"].Checks[0].Env["PYTHONPATH"] != "lib" {
		t.Errorf("checks[].env: %v, %+v", err, withEnv.Repos)
	}
}

// The schedule forms docs/operating.md promises: five fields, descriptors, @every, and a time zone.
func TestScheduleForms(t *testing.T) {
	tests := []struct {
		schedule string
		ok       bool
	}{
		{"0 1 * * *", true},
		{"30 23 * * 1-5", true},
		{"@daily", true},
		{"@midnight", true},
		{"@every 6h", true},
		{"CRON_TZ=Europe/Berlin 0 1 * * *", true},
		{"TZ=America/New_York 0 2 * * *", true},
		{"@nightly", false},
		{"0 1 * *", false},
		{"CRON_TZ=Mars/Olympus 0 1 * * *", false},
		{"0 25 * * *", false},
	}
	for _, tt := range tests {
		yaml := strings.Replace(valid, "  workers: 2", fmt.Sprintf("  workers: 2\n  schedule: %q", tt.schedule), 1)
		_, err := Parse("cfg.yaml", []byte(yaml))
		if (err == nil) != tt.ok {
			t.Errorf("schedule %q: err %v, want ok=%v", tt.schedule, err, tt.ok)
		}
	}
}

func TestGraceAndBudgetLimits(t *testing.T) {
	tests := []struct{ extra, want string }{
		{"night:\n  grace: -1s\n", "night.grace: must be >= 0"},
		{"budget:\n  max_dollars: -2\n", "budget.max_dollars: must be >= 0"},
		{"budget:\n  compact_at: 1.5\n", "budget.compact_at: must be a share"},
		// docs/operating.md promises a running ticket's cancel within 15 s: one heartbeat.
		{"night:\n  heartbeat: 16s\n", "night.heartbeat: must be at most 15s"},
	}
	for _, tt := range tests {
		_, err := Parse("cfg.yaml", []byte(strings.Replace(valid, "night:\n  workers: 2\n", "", 1)+tt.extra))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err %v, want %q", tt.extra, err, tt.want)
		}
	}
}

func TestSandboxConfig(t *testing.T) {
	withKey := strings.Replace(valid, "    checks:", "    pass_env: [APP_MODE, OPENAI_API_KEY]\n    checks:", 1) +
		"  \nsandbox: none\nmax_worktree_size: 512MiB\n"
	withKey = strings.Replace(withKey, `local: {base_url: "http://127.0.0.1:8080/v1"}`, `local: {base_url: "http://127.0.0.1:8080/v1", api_key_env: OPENAI_API_KEY}`, 1)
	withHeader := strings.Replace(valid, "    checks:", "    pass_env: [APP_MODE, LLM_GATEWAY_KEY]\n    checks:", 1)
	withHeader = strings.Replace(withHeader, `local: {base_url: "http://127.0.0.1:8080/v1"}`, `local: {base_url: "http://127.0.0.1:8080/v1", header_env: {X-Gateway-Key: LLM_GATEWAY_KEY}}`, 1)
	tests := []struct {
		name, yaml string
		want       string // substring of the error; "" means valid
	}{
		{name: "defaults", yaml: valid},
		{name: "none and a size", yaml: valid + "sandbox: none\nmax_worktree_size: 512MiB\n"},
		{name: "unknown mode", yaml: valid + "sandbox: docker\n", want: `sandbox: must be bwrap`},
		{name: "empty mode", yaml: valid + "sandbox: \"\"\n", want: `sandbox: must be bwrap`},
		{name: "bad size", yaml: valid + "max_worktree_size: huge\n", want: `"huge" is not a size`},
		{name: "tiny size", yaml: valid + "max_worktree_size: 10KiB\n", want: "max_worktree_size: must be at least 1MiB"},
		{name: "check limits", yaml: valid + "max_check_memory: 8GiB\nmax_check_processes: 512\n"},
		{name: "tiny check memory", yaml: valid + "max_check_memory: 1MiB\n", want: "max_check_memory: must be 0 (4GiB, or 256MiB per CPU where that is more) or at least 64MiB"},
		{name: "check memory by CPUs", yaml: valid + "max_check_memory: 0\n"},
		{name: "bad check memory", yaml: valid + "max_check_memory: lots\n", want: `"lots" is not a size`},
		{name: "too few check processes", yaml: valid + "max_check_processes: 8\n", want: "max_check_processes: must be 0 (4096, or twice the CPUs squared where that is more) or at least 16"},
		{name: "endpoint key passed", yaml: withKey, want: "repos.app.pass_env[1]: OPENAI_API_KEY is the API key of models.endpoints.local"},
		{name: "bad name passed", yaml: strings.Replace(valid, "    checks:", "    pass_env: [\"A=B\"]\n    checks:", 1), want: `repos.app.pass_env[0]: "A=B" is not`},
		{name: "header key passed", yaml: withHeader, want: "repos.app.pass_env[1]: LLM_GATEWAY_KEY is the X-Gateway-Key header of models.endpoints.local (header_env)"},
		{name: "github token passed", yaml: strings.Replace(valid, "    checks:", "    pass_env: [GITHUB_TOKEN]\n    checks:", 1), want: "repos.app.pass_env[0]: GITHUB_TOKEN is the GitHub token (github.token_env)"},
		{name: "renamed github token passed", yaml: strings.Replace(valid, "    checks:", "    pass_env: [GH_BOT]\n    checks:", 1) + "github:\n  token_env: GH_BOT\n", want: "repos.app.pass_env[0]: GH_BOT is the GitHub token"},
		// Issue 31: the store's URL (its password) is a secret another part of the config names.
		{name: "store url passed", yaml: strings.Replace(valid, "    checks:", "    pass_env: [TICKETD_DB_URL]\n    checks:", 1) + "store:\n  url_env: TICKETD_DB_URL\n", want: "repos.app.pass_env[0]: TICKETD_DB_URL is the PostgreSQL URL of the store (store.url_env)"},
		{name: "sandbox user", yaml: valid + "sandbox_user: ticketd-check\n"},
		{name: "root as sandbox user", yaml: valid + "sandbox_user: root\n", want: `sandbox_user: must name an unprivileged user`},
		{name: "sandbox paths", yaml: valid + "sandbox_paths: [/opt/tools]\n"},
		{name: "relative sandbox path", yaml: valid + "sandbox_paths: [tools]\n", want: `sandbox_paths[0]: must be an absolute path other than /, got "tools"`},
		{name: "root sandbox path", yaml: valid + "sandbox_paths: [/]\n", want: `sandbox_paths[0]: must be an absolute path other than /`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("cfg.yaml", []byte(tt.yaml))
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Parse error = %v, want %q", err, tt.want)
			}
			if err != nil {
				return
			}
			if tt.name == "defaults" && (c.Sandbox != "bwrap" || c.MaxWorktreeSize != 1<<30 || c.MaxWorktreeSize.String() != "1GiB") {
				t.Errorf("defaults: sandbox %q, max_worktree_size %s", c.Sandbox, c.MaxWorktreeSize)
			}
			if tt.name == "defaults" && (c.MaxCheckMemory != 0 || c.MaxCheckProcesses != 0) {
				t.Errorf("defaults: max_check_memory %s, max_check_processes %d", c.MaxCheckMemory, c.MaxCheckProcesses)
			}
			if tt.name == "check limits" && (c.MaxCheckMemory != 8<<30 || c.MaxCheckProcesses != 512) {
				t.Errorf("got max_check_memory %s, max_check_processes %d", c.MaxCheckMemory, c.MaxCheckProcesses)
			}
			if tt.name == "none and a size" && (c.Sandbox != "none" || c.MaxWorktreeSize != 512<<20) {
				t.Errorf("got sandbox %q, max_worktree_size %d", c.Sandbox, c.MaxWorktreeSize)
			}
		})
	}
	noPass := strings.Replace(strings.Replace(withHeader, "APP_MODE, LLM_GATEWAY_KEY", "APP_MODE", 1), `"http://127.0.0.1:8080/v1", header_env`, `"http://127.0.0.1:8080/v1", api_key_env: OPENAI_API_KEY, header_env`, 1)
	if c, err := Parse("cfg.yaml", []byte(noPass)); err != nil || !slices.Equal(c.Credentials(), []string{"GITHUB_TOKEN", "LLM_GATEWAY_KEY", "OPENAI_API_KEY"}) {
		t.Errorf("Credentials = %q (err %v), want the endpoint's key and header and the GitHub token", c.Credentials(), err)
	}
	c, err := Parse("cfg.yaml", []byte(strings.Replace(valid, "    checks:", "    pass_env: [APP_MODE]\n    checks:", 1)))
	if err != nil || len(c.Repos["app"].Checks[0].PassEnv) != 1 || c.Repos["app"].Checks[0].PassEnv[0] != "APP_MODE" {
		t.Errorf("pass_env does not reach the checks: %v %+v", err, c.Repos["app"].Checks)
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		ok   bool
	}{
		{"1GiB", 1 << 30, true}, {"512MiB", 512 << 20, true}, {"1G", 1 << 30, true}, {"100MB", 100_000_000, true},
		{"1.5GiB", 3 << 29, true}, {"2048", 2048, true}, {"10 KiB", 10 << 10, true},
		{"", 0, false}, {"-1GiB", 0, false}, {"1XB", 0, false}, {"GiB", 0, false}, {"1e30TiB", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseByteSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// A repository's interpreter is resolved against its own checkout: python: relative to the
// repository, and by default its .venv/bin/python when there is one.
func TestRepoPython(t *testing.T) {
	withVenv := t.TempDir()
	if err := os.MkdirAll(filepath.Join(withVenv, ".venv", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withVenv, ".venv", "bin", "python"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := t.TempDir()
	tests := []struct{ repo, python, want string }{
		{withVenv, "", filepath.Join(withVenv, ".venv", "bin", "python")},
		{plain, "", ""},
		{plain, "env/bin/python", filepath.Join(plain, "env", "bin", "python")},
		{plain, "/opt/py/bin/python3", "/opt/py/bin/python3"},
		{plain, "python3.12", "python3.12"},
	}
	for _, tt := range tests {
		if got := repoPython(tt.repo, tt.python); got != tt.want {
			t.Errorf("repoPython(%s, %q) = %q, want %q", tt.repo, tt.python, got, tt.want)
		}
	}
}

// TestReviewQuestionsInstructions: review.reviewers, budget.max_questions and
// repos.*.instructions, valid and not.
func TestReviewQuestionsInstructions(t *testing.T) {
	withInstr := func(list string) string {
		return strings.Replace(valid, "    checks:", "    instructions: "+list+"\n    checks:", 1)
	}
	withAllow := func(list string) string {
		return strings.Replace(valid, "    checks:", "    allow_paths: "+list+"\n    checks:", 1)
	}
	tests := []struct {
		name, yaml string
		want       string // substring of the error; "" means valid
	}{
		{name: "defaults", yaml: valid},
		{name: "three reviewers", yaml: valid + "review:\n  reviewers:\n    - angle: security\n      paths: [\"**/auth/**\"]\n      touches: ['pickle\\.loads']\n    - angle: performance\n    - angle: correctness\n"},
		{name: "unknown angle", yaml: valid + "review:\n  reviewers: [{angle: style}]\n", want: `review.reviewers[0]: angle "style": want one of correctness, security, performance`},
		{name: "listed twice", yaml: valid + "review:\n  reviewers: [{angle: security}, {angle: security}]\n", want: `review.reviewers[1].angle: "security" is listed twice`},
		{name: "bad glob", yaml: valid + "review:\n  reviewers: [{angle: security, paths: [\"[a\"]}]\n", want: "review.reviewers[0]: paths[0]"},
		{name: "bad pattern", yaml: valid + "review:\n  reviewers: [{angle: performance, touches: [\"(x\"]}]\n", want: "is not a regular expression"},
		{name: "correctness with paths", yaml: valid + "review:\n  reviewers: [{angle: correctness, paths: [\"*.py\"]}]\n", want: "correctness reviews every change"},
		{name: "no questions", yaml: valid + "budget:\n  max_questions: 0\n"},
		{name: "one round", yaml: valid + "review:\n  max_rounds: 1\n"},
		{name: "no rounds", yaml: valid + "review:\n  max_rounds: 0\n", want: "review.max_rounds: must be 1..20 (rounds of work a done fix gets after a review or a note; then a human), got 0"},
		{name: "too many questions", yaml: valid + "budget:\n  max_questions: 9\n", want: "budget.max_questions: must be 0..5"},
		{name: "instructions listed", yaml: withInstr("[AGENTS.md, docs/agents.md]")},
		{name: "instructions none", yaml: withInstr("[]")},
		{name: "instructions outside", yaml: withInstr("[../secrets.md]"), want: `repos.app.instructions[0]: "../secrets.md" must be a file path relative to the repository root`},
		{name: "instructions absolute", yaml: withInstr("[/etc/passwd]"), want: `repos.app.instructions[0]`},
		{name: "instructions in .git", yaml: withInstr("[.git/config]"), want: `repos.app.instructions[0]`},
		{name: "allow paths", yaml: withAllow("[requirements.txt, .github/workflows/*.yml, .vscode/]")},
		{name: "allow path outside", yaml: withAllow("[../x]"), want: `repos.app.allow_paths[0]: "../x" must be a clean path relative to the repository root`},
		{name: "allow path bad pattern", yaml: withAllow(`["[a"]`), want: `repos.app.allow_paths[0]: "[a" is not a valid pattern`},
		{name: "allow path in .git", yaml: withAllow("[.git/hooks/x]"), want: `repos.app.allow_paths[0]: ".git/hooks/x" names .git`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("cfg.yaml", []byte(tt.yaml))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				if got := c.Review.PipelineReviewers(); got[0].Angle != "correctness" {
					t.Errorf("reviewers %+v: correctness must come first", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
	c, _ := Parse("cfg.yaml", []byte(valid))
	if c.Budget.MaxQuestions != DefaultMaxQuestions || c.Repos["app"].Instructions != nil {
		t.Errorf("defaults: max_questions %d, instructions %v; want %d and nil (the default files)", c.Budget.MaxQuestions, c.Repos["app"].Instructions, DefaultMaxQuestions)
	}
	if c, _ := Parse("cfg.yaml", []byte(withInstr("[]"))); c.Repos["app"].Instructions == nil {
		t.Error("instructions: [] must read none, not the defaults")
	}
	// A configuration written back out (the bench does) keeps the defaults the defaults.
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Parse("cfg.yaml", out); err != nil || again.Repos["app"].Instructions != nil {
		t.Errorf("round trip: instructions %v, %v; want nil (the default files)", again.Repos["app"].Instructions, err)
	}
}

// TestBaseDir: relative paths resolve against base_dir (itself relative to the config's
// folder), never against the process's working directory; a base_dir that is not a folder
// is an error with its line and the command that creates it.
func TestBaseDir(t *testing.T) {
	state := t.TempDir()
	etc := t.TempDir()
	c, err := Parse(filepath.Join(etc, "config.yaml"), []byte("base_dir: "+state+"\n"+valid))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ key, got, want string }{
		{"store.path", c.Store.Path, filepath.Join(state, "ticketd.db")},
		{"workspace", c.Workspace, filepath.Join(state, "work")},
		{"output", c.Output, filepath.Join(state, "results")},
		{"repos.app.path", c.Repos["app"].Path, filepath.Join(filepath.Dir(state), "app")},
		{"intake[0].path", c.Intake[0].Path, filepath.Join(state, "issues")},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.key, tt.got, tt.want)
		}
	}
	if err := os.MkdirAll(filepath.Join(etc, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err = Parse(filepath.Join(etc, "config.yaml"), []byte("base_dir: state\n"+valid))
	if err != nil || c.Store.Path != filepath.Join(etc, "state", "ticketd.db") {
		t.Errorf("a relative base_dir: store.path %q, %v; want it under the config's folder", c.Store.Path, err)
	}
	_, err = Parse(filepath.Join(etc, "config.yaml"), []byte(valid+"base_dir: /nonexistent/ticketd\n"))
	if err == nil || !strings.Contains(err.Error(), "config.yaml:21: base_dir: /nonexistent/ticketd is not a folder") || !strings.Contains(err.Error(), "install -d") {
		t.Errorf("a missing base_dir: %v", err)
	}
}

func TestStoreConfig(t *testing.T) {
	t.Setenv("TICKETD_TEST_DB_URL", "postgres://ticketd:pw@db:5432/ticketd")
	tests := []struct {
		name, store string
		wantLoc     string // Location's result, when it parses
		wantShared  bool
		wantErr     string
	}{
		{name: "default path", store: "", wantLoc: "/ticketd.db"},
		{name: "path", store: "store:\n  path: q.db\n", wantLoc: "/q.db"},
		{name: "url_env", store: "store:\n  url_env: TICKETD_TEST_DB_URL\n", wantLoc: "postgres://ticketd:pw@db:5432/ticketd", wantShared: true},
		{name: "passwordless url", store: "store:\n  url: postgres://ticketd@127.0.0.1/ticketd\n", wantLoc: "postgres://ticketd@127.0.0.1/ticketd", wantShared: true},
		{name: "url with a password", store: "store:\n  url: postgres://ticketd:hunter2@db/ticketd\n", wantErr: "store.url: holds a password"},
		{name: "url with a password parameter", store: "store:\n  url: postgres://ticketd@db/ticketd?password=x\n", wantErr: "store.url: holds a password"},
		{name: "not postgres", store: "store:\n  url: mysql://db/x\n", wantErr: "store.url: want postgres://"},
		{name: "two of them", store: "store:\n  path: q.db\n  url_env: TICKETD_TEST_DB_URL\n", wantErr: "store: set one of path"},
		{name: "bad variable name", store: "store:\n  url_env: 'my-url'\n", wantErr: `store.url_env: "my-url" is not an environment variable name`},
		{name: "bad node", store: "node: 'vm 1'\n", wantErr: `node: "vm 1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("/etc/ticketd/cfg.yaml", []byte(valid+tt.store))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q): %v; want an error containing %q", tt.store, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.store, err)
			}
			loc, err := c.Store.Location()
			if err != nil || !strings.HasSuffix(loc, tt.wantLoc) || c.Store.Shared() != tt.wantShared {
				t.Errorf("Location = %q, %v, shared %v; want ...%q, shared %v", loc, err, c.Store.Shared(), tt.wantLoc, tt.wantShared)
			}
		})
	}
	c, err := Parse("cfg.yaml", []byte(valid+"store:\n  url_env: TICKETD_TEST_UNSET_URL\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store.Location(); err == nil || !strings.Contains(err.Error(), "TICKETD_TEST_UNSET_URL is not set") {
		t.Errorf("Location with the variable unset: %v; want an error naming it", err)
	}
}
