// Package demo runs ticketd's offline demo night: a small Python project with three bugs,
// three issue files written as users write them, and the scripted model (a test double, not
// a real model) answering in-process. Everything else — the store, the worktrees, the
// model client, the tests gate, the branches — is the real product path.
package demo

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
)

//go:embed all:sample
var sample embed.FS

//go:embed issues/*.md fixes/*.patch
var material embed.FS

// RepoName is the sample project's name in the demo configuration.
const RepoName = "invoicing"

// Options configures a demo night.
type Options struct {
	// Dir receives the sample project, the issues, the config, the database and the
	// results; empty means a new temporary folder. It must be empty or absent.
	Dir    string
	Stdout io.Writer
	Logger *slog.Logger
	// Latency is the scripted model's simulated per-call latency (0 answers at once).
	Latency time.Duration
	// Behaviour overrides the scripted maker's behaviour for every ticket (tests use
	// "never"); empty keeps the demo's own: two solved at once, one wrong first.
	Behaviour scriptedmodel.Behaviour
	// MaxAttempts per ticket; 0 means 3.
	MaxAttempts int
	// WrapModel, when set, wraps the scripted model's handler: a test holds answers back
	// with it to look at a night that cannot end before it has looked.
	WrapModel func(http.Handler) http.Handler
}

// Result is what the demo leaves behind.
type Result struct {
	Dir      string
	Config   string
	Database string
	Night    daemon.NightReport
	Tickets  []store.Summary
	Stats    store.Stats // the night's figures
	Gate     string      // "pytest" or "unittest"
	Sandbox  sandbox.Mode
}

// fixes maps each issue file to its intended patch and the scripted maker's behaviour.
var fixes = []struct {
	issue, patch string
	behaviour    scriptedmodel.Behaviour
}{
	{"01-average.md", "average.patch", scriptedmodel.BehaviourSolve},
	{"02-truncate.md", "truncate.patch", scriptedmodel.BehaviourSolve},
	{"03-discount.md", "discount.patch", scriptedmodel.BehaviourWrongThenRight},
}

// Run sets up the demo under opts.Dir and runs one night.
func Run(ctx context.Context, opts Options) (Result, error) {
	out := opts.Stdout
	if out == nil {
		out = io.Discard
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var res Result
	dir, err := prepareDir(opts.Dir)
	if err != nil {
		return res, err
	}
	res.Dir = dir
	fmt.Fprintf(out, "ticketd demo in %s\n", dir)

	repo := filepath.Join(dir, RepoName)
	if err := writeSample(ctx, repo); err != nil {
		return res, err
	}
	issues := filepath.Join(dir, "issues")
	cases, err := writeIssues(issues, opts.Behaviour)
	if err != nil {
		return res, err
	}
	server, err := scriptedmodel.New(cases, scriptedmodel.Options{Seed: 1, Latency: opts.Latency, Models: []string{"gpt-4.1", "gpt-4.1-mini"}})
	if err != nil {
		return res, fmt.Errorf("start the scripted model: %w", err)
	}
	baseURL, stopModel, err := serveModel(server, opts.WrapModel)
	if err != nil {
		return res, fmt.Errorf("start the scripted model: %w", err)
	}
	defer stopModel()

	res.Gate, res.Sandbox = chooseTools(ctx, out)
	maxAttempts := opts.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = 3
	}
	var cfg config.Config
	res.Config, cfg, err = writeConfig(dir, configYAML(dir, baseURL, res.Gate, maxAttempts)+"sandbox: "+string(res.Sandbox)+"\n")
	if err != nil {
		return res, err
	}
	res.Database = cfg.Store.Path

	st, err := daemon.OpenStore(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer st.Close()
	d := &daemon.Daemon{Config: cfg, Store: st, Logger: log}
	fmt.Fprintf(out, "running one night: %d issues, %d workers, answers from the scripted model at %s\n\n",
		len(cases), cfg.Night.Workers, baseURL)
	night, err := d.RunNight(ctx, "demo")
	res.Night = night
	if err != nil {
		return res, fmt.Errorf("demo night: %w", err)
	}
	res.Tickets, err = st.List(ctx, store.Filter{})
	if err != nil {
		return res, err
	}
	sort.Slice(res.Tickets, func(i, j int) bool { return res.Tickets[i].ID < res.Tickets[j].ID })
	if res.Stats, err = st.Stats(ctx, night.RunID); err != nil {
		return res, err
	}
	printSummary(out, res)
	return res, nil
}

// chooseTools picks the test gate and the sandbox the machine supports, saying on out what
// the demo falls back to: it must run on a bare machine, and say so where it does.
func chooseTools(ctx context.Context, out io.Writer) (gate string, mode sandbox.Mode) {
	gate = validate.KindPytest
	if _, err := validate.ResolvePytest(ctx); err != nil {
		gate = validate.KindUnittest
		fmt.Fprintf(out, "pytest is not installed, so the demo's test gate uses python3 -m unittest instead\n(install it with: apt-get install -y python3-pytest)\n")
	}
	if _, err := sandbox.Probe(ctx, ""); err != nil {
		fmt.Fprintf(out, "bubblewrap is not usable here, so the demo runs the sample's tests WITHOUT the sandbox (sandbox: none):\n  %v\nticketd once/run refuse to start like this unless their config says sandbox: none.\n", err)
		return gate, sandbox.ModeNone
	}
	fmt.Fprintf(out, "the sample's tests run in the bubblewrap sandbox (sandbox: bwrap)\n")
	return gate, sandbox.ModeBwrap
}

// writeConfig writes the demo's config.yaml into dir and parses it back as ticketd would.
func writeConfig(dir, text string) (string, config.Config, error) {
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return path, config.Config{}, fmt.Errorf("write demo config: %w", err)
	}
	cfg, err := config.Parse(path, []byte(text))
	if err != nil {
		return path, config.Config{}, fmt.Errorf("demo config: %w", err)
	}
	return path, cfg, nil
}

func prepareDir(dir string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "ticketd-demo-")
		if err != nil {
			return "", fmt.Errorf("create demo folder: %w", err)
		}
		return d, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return abs, os.MkdirAll(abs, 0o755)
	case err != nil:
		return "", fmt.Errorf("demo folder %s: %w", abs, err)
	case len(entries) > 0:
		return "", fmt.Errorf("demo folder %s is not empty: pass a new --dir, or leave --dir out for a fresh temporary folder", abs)
	}
	return abs, nil
}

// writeSample writes the sample project and commits it as the base of every fix.
func writeSample(ctx context.Context, repo string) error {
	err := fs.WalkDir(sample, "sample", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(repo, strings.TrimPrefix(p, "sample"))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := sample.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return fmt.Errorf("write sample project: %w", err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=ticketd demo", "-c", "user.email=demo@ticketd.invalid", "commit", "-q", "-m", "Sample invoicing project with three reported bugs"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), repo, err, out)
		}
	}
	return nil
}

// writeIssues writes the issue files and returns the scripted model's cases for them.
func writeIssues(dir string, override scriptedmodel.Behaviour) ([]scriptedmodel.Case, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var cases []scriptedmodel.Case
	for _, f := range fixes {
		data, err := material.ReadFile("issues/" + f.issue)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, f.issue), data, 0o644); err != nil {
			return nil, err
		}
		patch, err := material.ReadFile("fixes/" + f.patch)
		if err != nil {
			return nil, err
		}
		title, _, _ := strings.Cut(strings.SplitN(string(data), "title: ", 2)[1], "\n")
		b := f.behaviour
		if override != "" {
			b = override
		}
		cases = append(cases, scriptedmodel.Case{Match: title, Patch: string(patch), Behaviour: b})
	}
	return cases, nil
}

func configYAML(dir, baseURL, gate string, maxAttempts int) string {
	return fmt.Sprintf(`# ticketd demo configuration, written by "ticketd demo".
# The models endpoint below is the scripted model (a test double) that the demo started
# in-process on a loopback port: it is gone when the demo ends. To point ticketd at a real
# OpenAI-compatible endpoint, start from config.yaml in the ticketd repository.
store:
  path: ticketd.db
night:
  workers: 3
  lease: 30s
  heartbeat: 5s
  max_attempts: %d
  retry_backoff: 1s
  poll: 100ms
  window: 1h
budget:
  max_steps: 12
  wall_clock: 5m
intake:
  - kind: dir
    path: issues
repos:
  %s:
    path: %s
    base_ref: main
    checks:
      - name: tests
        kind: %s
        timeout: 2m
workspace: work
output: results
models:
  endpoints:
    scripted:
      base_url: %s
  roles:
    triage:  {endpoint: scripted, model: gpt-4.1-mini}
    maker:   {endpoint: scripted, model: gpt-4.1}
    checker: {endpoint: scripted, model: gpt-4.1-mini}
    judge:   {endpoint: scripted, model: gpt-4.1-mini}
`, maxAttempts, RepoName, filepath.Join(dir, RepoName), gate, baseURL)
}

func printSummary(out io.Writer, res Result) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TICKET\tSTATE\tATTEMPTS\tMODEL CALLS\tTOKENS (PROMPT/CACHED/OUT)\tCOST\tTIME\tBRANCH")
	var cost float64
	for _, t := range res.Tickets {
		cost += t.CostUSD
		fmt.Fprintf(tw, "#%d %s\t%s\t%d\t%d\t%d/%d/%d\t$%.4f\t%s\t%s\n", t.ID, clip(t.Title, 40), t.State, t.Attempts,
			t.ModelCalls, t.PromptTokens, t.CachedTokens, t.CompletionTokens, t.CostUSD,
			t.Duration.Round(10*time.Millisecond), t.Branch)
	}
	tw.Flush()
	st := res.Stats
	fmt.Fprintf(out, "\nnight took %s; model cost $%.4f at the configured models' list prices.\n",
		res.Night.Finished.Sub(res.Night.Started).Round(10*time.Millisecond), cost)
	fmt.Fprintf(out, "per ticket: %.1f model requests, $%.4f per done ticket; prompt tokens %d, of which cached %d (%.0f%%)\n",
		st.ModelRequestsPerTicket, st.CostPerDoneTicketUSD, st.PromptTokens, st.CachedTokens, 100*ratio(st.CachedTokens, st.PromptTokens))
	var shares []string
	for _, role := range []string{"triage", "maker", "checker", "judge"} {
		if v, ok := st.FirstRequestCachedShare[role]; ok {
			shares = append(shares, fmt.Sprintf("%s %.2f", role, v))
		}
	}
	fmt.Fprintf(out, "first request of each role, cached share: %s (the first ticket writes the cache)\n", strings.Join(shares, ", "))
	fmt.Fprintf(out, `
These answers came from the SCRIPTED MODEL, a test double that replays known fixes; no real
model was called and no money was spent. Everything else was real: the SQLite queue, the git
worktrees and branches in %s, the pytest/unittest gate, the reports in %s.

Look closer:
  go run ./cmd/ticketctl --db %s list
  go run ./cmd/ticketctl --db %s show 1
  cat %s

To use a real OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama, OpenRouter, LiteLLM),
copy config.yaml from the repository, set models.endpoints.*.base_url and api_key_env, point
repos at your repository and run: go run ./cmd/ticketd once --config config.yaml
`, filepath.Join(res.Dir, RepoName), filepath.Join(res.Dir, "results"), res.Database, res.Database,
		filepath.Join(res.Dir, "results", "1", "report.md"))
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// serveModel serves the scripted model on a loopback port, through wrap when it is set,
// and returns its base URL (ending in /v1) and how to stop it.
func serveModel(server *scriptedmodel.Server, wrap func(http.Handler) http.Handler) (string, func(), error) {
	if wrap == nil {
		baseURL, err := server.Start()
		return baseURL, func() { server.Close() }, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen on loopback: %w", err)
	}
	srv := &http.Server{Handler: wrap(server.Handler()), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed after Close
	return "http://" + ln.Addr().String() + "/v1", func() { srv.Close() }, nil
}
