package github

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// clock is a settable time for the client's Now seam.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestPublishRefusalBackoff: a pull request GitHub refuses for a reason only a human
// removes (a token without Pull requests write; an archived repository) is asked again
// after a backoff that doubles, not at every poll; every pass in between still reports the
// refusal in GitHub's words (Syncer.Failing, which the night's outcome reads), and the
// ticket stays unpublished. A new night (RetryRefused) asks at once; once the human fixed
// it, the pull request opens. GitHub failing on its side (500) is asked again at every poll.
func TestPublishRefusalBackoff(t *testing.T) {
	const create = "POST /repos/acme/app/pulls"
	tests := []struct {
		name   string
		answer reply
		words  string // GitHub's words in the failing operation
		held   bool
	}{
		{"token lacks pull requests write (403)", reply{403, nil,
			`{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"403"}`},
			"Resource not accessible by personal access token", true},
		{"repository archived (403)", reply{403, nil,
			`{"message":"Repository was archived so is read-only.","documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"403"}`},
			"Repository was archived so is read-only.", true},
		{"GitHub's own failure (500)", reply{500, nil, `{"message":"Server Error"}`}, "Server Error", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, cn := setupCanned(t)
			ctx := context.Background()
			clk := clockedClient(t, &b, cn)
			cn.set(create, tt.answer)
			finish(t, b, "acme/app#1", "average of an empty list", true, "")
			pl := &pushLog{}
			p := newPublisher(b, pl)
			s := &Syncer{Publisher: p, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			tries := 0
			pass := func(wantTry bool) {
				t.Helper()
				before := cn.count(create)
				s.Publish(ctx)
				tried := cn.count(create) > before
				if tried {
					tries++
				}
				if tried != wantTry {
					t.Fatalf("pass at %s: asked GitHub = %v, want %v ", clk.now().Format(time.TimeOnly), tried, wantTry)
				}
				failing := strings.Join(s.Failing(), "\n")
				if !strings.Contains(failing, "publish: pull request for ticket") || !strings.Contains(failing, tt.words) {
					t.Fatalf("pass at %s: failing = %q; want the publish with GitHub's words %q", clk.now().Format(time.TimeOnly), failing, tt.words)
				}
				if left, _ := b.store.Unpublished(ctx, Source, store.StateDone, store.OutputPullRequest, 10); len(left) != 1 {
					t.Fatalf("unpublished tickets = %d; want the refused one kept", len(left))
				}
			}
			pass(true)
			pass(!tt.held) // the next poll, a minute on
			clk.add(time.Minute)
			pass(!tt.held)
			clk.add(time.Minute) // 2m after the refusal
			pass(true)
			clk.add(3 * time.Minute) // the second hold is 4m
			pass(!tt.held)
			clk.add(time.Minute)
			pass(true)
			for range 12 { // capped: an hour at most between tries
				clk.add(refusalBackoffCap)
				pass(true)
			}
			p.RetryRefused() // a new night
			pass(true)
			if tt.held && len(pl.pushes) != tries {
				t.Errorf("%d pushes for %d tries; a held pass pushes nothing", len(pl.pushes), tries)
			}

			cn.unset(create) // the human fixed it: the fake answers
			clk.add(refusalBackoffCap)
			s.Publish(ctx)
			if f := s.Failing(); len(f) != 0 {
				t.Errorf("after the fix: failing %v", f)
			}
			if left, _ := b.store.Unpublished(ctx, Source, store.StateDone, store.OutputPullRequest, 10); len(left) != 0 {
				t.Errorf("after the fix: %d tickets unpublished, want the pull request opened", len(left))
			}
		})
	}
}

// TestPublishPushRefusalBackoff: a push the remote refuses (a pre-receive hook here, as a
// protected branch or a token without Contents write is on GitHub) is held back like an API
// refusal, and reported the same at each pass; a remote that cannot be reached is asked
// again at the next poll.
func TestPublishPushRefusalBackoff(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git on PATH (apt-get install git)")
	}
	b := setup(t)
	ctx := context.Background()
	clk := clockedClient(t, &b, nil)
	tk := finish(t, b, "acme/app#1", "average of an empty list", true, "")
	src, remote := t.TempDir(), filepath.Join(t.TempDir(), "remote.git")
	runGit(t, src, "init", "-q")
	runGit(t, src, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "fix")
	runGit(t, src, "branch", tk.Branch)
	runGit(t, filepath.Dir(remote), "init", "-q", "--bare", remote)
	tries := filepath.Join(t.TempDir(), "tries")
	hook := "#!/bin/sh\necho x >> " + tries + "\necho 'refs/heads/ticketd/* is protected' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	hookRuns := func() int {
		data, _ := os.ReadFile(tries)
		return strings.Count(string(data), "x")
	}
	p := newPublisher(b, nil)
	p.Push = worktree.Push
	p.Targets = []Target{{Name: testRepo, Dir: src, PushURL: remote}}
	for i, step := range []struct {
		after time.Duration
		runs  int
	}{{0, 1}, {time.Minute, 1}, {time.Minute, 2}, {time.Minute, 2}} {
		clk.add(step.after)
		_, err := p.Publish(ctx)
		if err == nil || !strings.Contains(err.Error(), "is protected") {
			t.Fatalf("pass %d: %v; want the remote's refusal", i, err)
		}
		if got := hookRuns(); got != step.runs {
			t.Fatalf("pass %d: the remote was pushed to %d time(s), want %d", i, got, step.runs)
		}
	}
	p.Targets[0].PushURL = filepath.Join(t.TempDir(), "gone.git") // unreachable: not a refusal
	p.RetryRefused()
	for i := range 2 {
		if _, err := p.Publish(ctx); err == nil {
			t.Fatalf("pass %d to a remote that is gone: no error", i)
		}
		if n := len(p.refused.held); n != 0 {
			t.Fatalf("pass %d to a remote that is gone: %d write(s) held back; want none (asked again at the next poll)", i, n)
		}
	}
}

func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// logRecord is one record a capture handler kept: its level, message and err attribute.
type logRecord struct {
	level slog.Level
	msg   string
	err   string
}

// capture is a slog.Handler that keeps every record, debug included.
type capture struct {
	mu      sync.Mutex
	records []logRecord
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *capture) WithGroup(string) slog.Handler            { return c }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" || a.Key == "was" {
			rec.err = a.Value.String()
		}
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, rec)
	return nil
}

// take returns the records kept since the last take.
func (c *capture) take() []logRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.records
	c.records = nil
	return out
}

// TestPublishRefusalLoggedOnce: a refusal held back is logged as an error when it starts
// and when GitHub's words change, at debug level while it goes on (re-reported without
// asking, or met again when its hold ends), and at info when it ends; Syncer.Failing
// reports it at every pass all the same.
func TestPublishRefusalLoggedOnce(t *testing.T) {
	const create = "POST /repos/acme/app/pulls"
	scope := reply{403, nil, `{"message":"Resource not accessible by personal access token"}`}
	archived := reply{403, nil, `{"message":"Repository was archived so is read-only."}`}
	b, cn := setupCanned(t)
	ctx := context.Background()
	clk := clockedClient(t, &b, cn)
	finish(t, b, "acme/app#1", "average of an empty list", true, "")
	logs := &capture{}
	p := newPublisher(b, &pushLog{})
	p.Logger = slog.New(logs)
	s := &Syncer{Publisher: p, Logger: p.Logger}
	steps := []struct {
		name    string
		after   time.Duration
		answer  *reply // nil: GitHub answers as the fake does
		level   slog.Level
		msg     string
		words   string
		failing bool
	}{
		{"refused: the hold starts", 0, &scope, slog.LevelError, "github publish", "Resource not accessible", true},
		{"held: re-reported", time.Minute, &scope, slog.LevelDebug, "github publish still refused", "Resource not accessible", true},
		{"hold over, refused the same", 2 * time.Minute, &scope, slog.LevelDebug, "github publish still refused", "Resource not accessible", true},
		{"held again", time.Minute, &scope, slog.LevelDebug, "github publish still refused", "Resource not accessible", true},
		{"hold over, refused otherwise", 4 * time.Minute, &archived, slog.LevelError, "github publish", "archived", true},
		{"held: the new refusal", time.Minute, &archived, slog.LevelDebug, "github publish still refused", "archived", true},
		{"fixed: the refusal ends", time.Hour, nil, slog.LevelInfo, "github refusal ended", "archived", false},
	}
	for _, st := range steps {
		clk.add(st.after)
		if st.answer != nil {
			cn.set(create, *st.answer)
		} else {
			cn.unset(create)
		}
		s.Publish(ctx)
		var matched bool
		for _, r := range logs.take() {
			if r.level >= slog.LevelError && r.level != st.level {
				t.Errorf("%s: logged %s %q (%s); want no error", st.name, r.level, r.msg, r.err)
			}
			if r.level == st.level && r.msg == st.msg && strings.Contains(r.err, st.words) {
				matched = true
			}
		}
		if !matched {
			t.Errorf("%s: no %s record %q naming %q", st.name, st.level, st.msg, st.words)
		}
		failing := strings.Join(s.Failing(), "\n")
		if got := strings.Contains(failing, st.words); got != st.failing {
			t.Errorf("%s: failing = %q; want it to name %q: %v", st.name, failing, st.words, st.failing)
		}
	}
}

// clockedClient gives b a client on a test clock, through cn's canned answers when cn is
// not nil, and returns the clock.
func clockedClient(t *testing.T, b *bundle, cn *canned) *clock {
	t.Helper()
	clk := &clock{t: time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)}
	opts := ClientOptions{BaseURL: b.fake.URL(), Token: githubfake.Token, Now: clk.now}
	if cn != nil {
		opts.Transport = cn
	}
	c, err := NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	b.client = c
	return clk
}
