package worktree

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// repoAndBareRemote is a repository of one commit with the branch ticketd/1-fix, and the
// path of an empty bare repository to push it to.
func repoAndBareRemote(t *testing.T) (src, remote string) {
	t.Helper()
	src, remote = t.TempDir(), filepath.Join(t.TempDir(), "remote.git")
	gitT(t, src, "init", "-q")
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	gitT(t, src, "add", ".")
	gitT(t, src, "commit", "-qm", "a")
	gitT(t, src, "branch", "ticketd/1-fix")
	gitT(t, filepath.Dir(remote), "init", "-q", "--bare", remote)
	return src, remote
}

func TestPushToBareRemote(t *testing.T) {
	ctx := context.Background()
	src, remote := repoAndBareRemote(t)
	for i := range 2 { // the second push is a no-op: a restart re-pushing is harmless
		if err := Push(ctx, src, remote, "ticketd/1-fix", ""); err != nil {
			t.Fatalf("push %d: %v", i+1, err)
		}
	}
	if got, want := gitT(t, remote, "rev-parse", "ticketd/1-fix"), gitT(t, src, "rev-parse", "ticketd/1-fix"); got != want {
		t.Errorf("remote branch at %s, want %s", got, want)
	}
	// A remote branch moved by someone else is not overwritten.
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("b\n"), 0o644)
	gitT(t, src, "commit", "-qam", "b")
	gitT(t, src, "branch", "-f", "ticketd/1-fix", "HEAD~1")
	gitT(t, src, "push", "-q", remote, "main:refs/heads/ticketd/1-fix", "--force")
	if err := Push(ctx, src, remote, "ticketd/1-fix", ""); err == nil || !strings.Contains(err.Error(), "[rejected] (non-fast-forward)") ||
		!strings.Contains(err.Error(), "never force-pushes") {
		t.Errorf("push over a diverged remote branch: %v; want a non-fast-forward error saying what to do", err)
	}
}

// TestPushSaysWhyTheRemoteRefused: the remote's verdict, which git push --porcelain prints on
// stdout, is in the error, with the remote's own words. Before, the error held git's stderr
// alone, "error: failed to push some refs", which does not say why.
func TestPushSaysWhyTheRemoteRefused(t *testing.T) {
	ctx := context.Background()
	src, remote := t.TempDir(), filepath.Join(t.TempDir(), "remote.git")
	gitT(t, src, "init", "-q")
	gitT(t, src, "commit", "-q", "--allow-empty", "-m", "a")
	gitT(t, src, "branch", "ticketd/2-fix")
	gitT(t, filepath.Dir(remote), "init", "-q", "--bare", remote)
	hook := filepath.Join(remote, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'ticketd/* is closed for pushes' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Push(ctx, src, remote, "ticketd/2-fix", "")
	for _, w := range []string{"[remote rejected] (pre-receive hook declined)", "remote: ticketd/* is closed for pushes"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("push refused by a pre-receive hook: %v; want it to say %q", err, w)
		}
	}
	// A hook that prints megabytes: the error keeps the verdict and the first of its words.
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'closed for pushes'\nyes 'more noise from the hook' | head -c 3000000\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = Push(ctx, src, remote, "ticketd/2-fix", "")
	if err == nil || len(err.Error()) > 4000 || !strings.Contains(err.Error(), "[remote rejected]") || !strings.Contains(err.Error(), "closed for pushes") {
		n := 0
		if err != nil {
			n = len(err.Error())
		}
		t.Errorf("push refused by a chatty hook: an error of %d bytes; want under 4000 with the verdict and the hook's first words", n)
	}
	err = Push(ctx, src, filepath.Join(t.TempDir(), "gone.git"), "ticketd/2-fix", "")
	if err == nil || !strings.Contains(err.Error(), "does not appear to be a git repository") {
		t.Errorf("push to a remote that is gone: %v; want git's words", err)
	}
}

func TestPushSendsTokenOnlyInHeader(t *testing.T) {
	src := t.TempDir()
	gitT(t, src, "init", "-q")
	gitT(t, src, "commit", "-q", "--allow-empty", "-m", "a")
	gitT(t, src, "branch", "b")
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer srv.Close()
	const token = "s3cret-token-value"
	err := Push(context.Background(), src, srv.URL+"/acme/app.git", "b", token)
	if err == nil {
		t.Fatal("push to a refusing server succeeded")
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("error leaks the token: %v", err)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 || auth[0] != want {
		t.Errorf("server saw Authorization %q, want %q", auth, want)
	}
}

func TestBranches(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "-q")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "a")
	for _, b := range []string{"ticketd/1-a", "ticketd/1-b", "ticketd/12-c", "other"} {
		gitT(t, dir, "branch", b)
	}
	got, err := Branches(context.Background(), dir, "ticketd/1-")
	if err != nil || strings.Join(got, ",") != "ticketd/1-a,ticketd/1-b" {
		t.Errorf("Branches(ticketd/1-) = %v, %v; want ticketd/1-a, ticketd/1-b (not ticketd/12-c)", got, err)
	}
}

// TestPushToRemoteTokenInHeader: push_remote's credential (push_token_env) goes as a basic
// auth header, "USER:TOKEN" as given, and a remote URL's own credentials never show in the
// error (issue 31).
func TestPushToRemoteTokenInHeader(t *testing.T) {
	src := t.TempDir()
	gitT(t, src, "init", "-q")
	gitT(t, src, "commit", "-q", "--allow-empty", "-m", "a")
	gitT(t, src, "branch", "b")
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer srv.Close()
	gitT(t, src, "remote", "add", "origin", srv.URL+"/acme/app.git")
	gitT(t, src, "remote", "add", "leaky", strings.Replace(srv.URL, "http://", "http://bot:url-password-31@", 1)+"/acme/app.git")
	const token = "oauth2:glpat-abcdefghijklmnopqrst"
	if err := PushToRemote(context.Background(), src, "origin", "b", token); err == nil || strings.Contains(err.Error(), "glpat-") {
		t.Errorf("push with a token: err %v; want a failure that does not show the token", err)
	}
	if err := PushToRemote(context.Background(), src, "leaky", "b", ""); err == nil || strings.Contains(err.Error(), "url-password-31") {
		t.Errorf("push to a URL with credentials: err %v; want a failure that does not show them", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "Basic " + base64.StdEncoding.EncodeToString([]byte(token)); len(auth) == 0 || auth[0] != want {
		t.Errorf("server saw Authorization %q, want %q first", auth, want)
	}
}

// TestPushRunsNoConfiguredReceivePack: a repository config's remote.<url>.receivepack (and
// uploadpack) names the command git starts for a file remote, as a shell command line on
// this machine: where the git directory is writable by the code under test (sandbox: none),
// a check could name its own program for ticketd's next push or delete to run. ticketd's
// push names git-receive-pack itself, which the command line makes win over any config.
// Negative control: plain git push runs the configured command.
func TestPushRunsNoConfiguredReceivePack(t *testing.T) {
	ctx := context.Background()
	src, remote := repoAndBareRemote(t)
	remote = "file://" + remote
	gitT(t, src, "remote", "add", "origin", remote)
	mark := filepath.Join(t.TempDir(), "ran")
	for _, name := range []string{remote, "origin"} {
		gitT(t, src, "config", "remote."+name+".receivepack", "touch "+mark+"; git-receive-pack")
	}
	if err := Push(ctx, src, remote, "ticketd/1-fix", ""); err != nil {
		t.Fatalf("push: %v", err)
	}
	if err := PushToRemote(ctx, src, "origin", "ticketd/1-fix", ""); err != nil {
		t.Fatalf("push to origin: %v", err)
	}
	if deleted, err := DeleteFromRemote(ctx, src, "origin", "ticketd/1-fix", ""); err != nil || !deleted {
		t.Fatalf("delete from origin: %v, %v", deleted, err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("ticketd's push ran the repository's configured receive-pack command")
	}
	gitT(t, src, "-c", "protocol.file.allow=always", "push", "-q", remote, "ticketd/1-fix")
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("negative control: plain git push did not run the configured command (%v), so the test cannot tell", err)
	}
}

// TestPushRefusesRewrittenURL: a url.<base>.insteadOf or pushInsteadOf rule in the
// repository's config that starts the push URL would send the branch elsewhere: the push is
// refused, naming the rule, and the rewrite target receives nothing. A rule for other URLs
// leaves the push alone.
func TestPushRefusesRewrittenURL(t *testing.T) {
	tests := []struct {
		name, key string
		matches   bool
	}{
		{"pushInsteadOf", "pushInsteadOf", true},
		{"insteadOf", "insteadOf", true},
		{"a rule for another URL", "pushInsteadOf", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			src, remote := repoAndBareRemote(t)
			remote = "file://" + remote
			_, elsewhere := repoAndBareRemote(t)
			from := remote
			if !tt.matches {
				from = "file:///no/such/remote"
			}
			gitT(t, src, "config", "url.file://"+elsewhere+"."+tt.key, from)
			err := Push(ctx, src, remote, "ticketd/1-fix", "")
			if got := gitT(t, elsewhere, "branch", "--list", "ticketd/1-fix"); got != "" {
				t.Errorf("the rewrite's target received the branch: %q", got)
			}
			if tt.matches {
				if err == nil || !strings.Contains(err.Error(), "rewrites that URL") || !strings.Contains(err.Error(), elsewhere) {
					t.Errorf("push = %v, want it refused naming the rule", err)
				}
			} else if err != nil {
				t.Errorf("push: %v", err)
			}
		})
	}
}

func FuzzURLRewrite(f *testing.F) {
	f.Add("url.https://evil.example/.pushinsteadof\nhttps://github.com/\x00", "https://github.com/o/r.git")
	f.Add("url.x.insteadof\n\x00url.y.insteadof\x00", "file:///srv/r")
	f.Fuzz(func(t *testing.T, out, url string) {
		key, from := urlRewrite(out, url)
		if key != "" && !strings.HasPrefix(url, from) {
			t.Fatalf("urlRewrite(%q, %q) = %q, %q: the rule does not start the URL", out, url, key, from)
		}
		if key == "" && from != "" {
			t.Fatalf("urlRewrite(%q, %q) gave a value without a key", out, url)
		}
	})
}
