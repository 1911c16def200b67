package worktree

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// plainGit runs git as a user would in dir and returns its combined output
// and error, without failing the test: negative controls need git commands
// whose configured helpers may make them fail.
func plainGit(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	// A configured helper that misbehaves must not hang the test.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = userGitEnv()
	waited := ownProcessGroup(cmd, false)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	waited()
	return string(out), err
}

// evilRepo is newRepo whose .git/config, .git/hooks and an included config
// file name a marker command for everything a repository can make git run:
// fsmonitor, clean/smudge/process filters (one from an included file), an
// external diff, a diff driver command, textconv, gpg and the hooks of add,
// commit, checkout and ref updates. It returns the repository and the log
// the markers append their names to.
func evilRepo(t testing.TB) (repo, log string) {
	t.Helper()
	repo = newRepo(t, true)
	writeFile(t, filepath.Join(repo, ".gitattributes"), "*.txt filter=evil diff=evil\n*.dat filter=proc\n*.inc filter=inc\n")
	writeFile(t, filepath.Join(repo, "a.txt"), "alpha\n")
	writeFile(t, filepath.Join(repo, "b.dat"), "bravo\n")
	writeFile(t, filepath.Join(repo, "c.inc"), "charlie\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "--quiet", "-m", "attributes")

	dir := t.TempDir()
	log = filepath.Join(dir, "marks.log")
	mk := writeMarkers(t, dir, log)
	extra := filepath.Join(dir, "extra.cfg")
	writeFile(t, extra, "[filter \"inc\"]\n\tclean = "+mk["clean-included"]+"\n")
	for _, kv := range [][2]string{
		{"core.fsmonitor", mk["fsmonitor"]},
		{"filter.evil.clean", mk["clean"]},
		{"filter.evil.smudge", mk["smudge"]},
		{"filter.proc.process", mk["process"]},
		{"include.path", extra},
		{"diff.external", mk["external"]},
		{"diff.evil.command", mk["diffcommand"]},
		{"diff.evil.textconv", mk["textconv"]},
		{"commit.gpgSign", "true"},
		{"gpg.program", mk["gpg"]},
	} {
		git(t, repo, "config", kv[0], kv[1])
	}
	for _, hook := range []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout", "reference-transaction", "post-index-change"} {
		p := filepath.Join(repo, ".git", "hooks", hook)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(mk[hook], p); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Remove(log)
	return repo, log
}

// TestRepoConfigRunsNothing is the trust-boundary acceptance: every command
// the repository configures stays unrun through Prepare, Diff, Changed,
// Commit, FilesAt, Remove and CollectLeftovers, while the same repository
// makes plain git run each of them (the negative control).
func TestRepoConfigRunsNothing(t *testing.T) {
	ctx := context.Background()
	repo, log := evilRepo(t)
	root := t.TempDir()
	m := NewManager(root, nil)

	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-evil")
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	for _, f := range []string{"a.txt", "b.dat", "c.inc"} {
		writeFile(t, filepath.Join(tree.Dir, f), "changed "+f+"\n")
	}
	writeFile(t, filepath.Join(tree.Dir, "d.txt"), "new file\n")
	diff, err := tree.Diff(ctx)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	for _, want := range []string{"+changed a.txt", "-bravo", "+changed c.inc", "+new file"} {
		if !strings.Contains(diff, want) {
			t.Errorf("Diff lacks %q:\n%s", want, diff)
		}
	}
	if _, err := tree.Changed(ctx); err != nil {
		t.Fatalf("Changed: %v", err)
	}
	commit, err := tree.Commit(ctx, "evil")
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := git(t, repo, "cat-file", "-p", commit); strings.Contains(got, "gpgsig") {
		t.Errorf("Commit was signed:\n%s", got)
	}
	// The fix's own path: blobs hashed under the files' attributes, which name the drivers.
	var changes []Change
	for _, f := range []string{"a.txt", "b.dat", "c.inc"} {
		changes = append(changes, Change{Path: f, Data: []byte("maker's " + f + "\n")})
	}
	if _, err := tree.DiffChanges(ctx, changes); err != nil {
		t.Fatalf("DiffChanges: %v", err)
	}
	if _, err := tree.CommitChanges(ctx, "evil changes", changes); err != nil {
		t.Fatalf("CommitChanges: %v", err)
	}
	if _, err := FilesAt(repo, commit); err != nil {
		t.Fatalf("FilesAt: %v", err)
	}
	if err := m.Remove(ctx, tree, false); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := m.Prepare(ctx, repo, "main", "ticketd/2-evil"); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if removed, err := NewManager(root, nil).CollectLeftovers(ctx, repo); err != nil || len(removed) != 1 {
		t.Fatalf("CollectLeftovers = %q, %v; want the one tree removed", removed, err)
	}
	if ran := readMarks(t, log); len(ran) != 0 {
		t.Errorf("ticketd's git ran repository-configured commands: %v", slices.Sorted(maps.Keys(ran)))
	}

	// Negative control: the same repository makes a user's git run each.
	plain := filepath.Join(t.TempDir(), "plain")
	steps := [][]string{
		{"worktree", "add", "--quiet", "-b", "plain", plain, "main"},
		{"-C", plain, "status", "--short"},
	}
	for _, s := range steps {
		if out, err := plainGit(t, repo, s...); err != nil {
			t.Logf("plain git %s: %v\n%s", s, err, out)
		}
	}
	for _, f := range []string{"a.txt", "b.dat", "c.inc"} {
		writeFile(t, filepath.Join(plain, f), "changed "+f+"\n")
	}
	for _, s := range [][]string{
		{"add", "-A"},
		{"diff", "HEAD"},
		{"diff", "--no-ext-diff", "HEAD"},
		{"commit", "--quiet", "-m", "plain"},
	} {
		if out, err := plainGit(t, plain, s...); err != nil {
			t.Logf("plain git %s: %v\n%s", s, err, out)
		}
	}
	ran := readMarks(t, log)
	for _, name := range markerNames {
		if !ran[name] {
			t.Errorf("negative control: plain git did not run the configured %s, so the test cannot tell", name)
		}
	}
}

// TestTreeIgnoresRewrittenGitLinks: the code under test can rewrite the
// worktree's .git file, or its git dir's commondir file, to point at another
// repository with an evil config. ticketd's git keeps using the git dirs it
// recorded at Prepare; plain git follows the rewrite (negative control).
func TestTreeIgnoresRewrittenGitLinks(t *testing.T) {
	ctx := context.Background()
	evil, log := evilRepo(t)
	evilGitDir := filepath.Join(evil, ".git")
	tests := []struct {
		name    string
		rewrite func(t *testing.T, tree *Tree)
		wantErr string // "": Diff and Commit work on the real repository
	}{
		{".git file", func(t *testing.T, tree *Tree) {
			writeFile(t, filepath.Join(tree.Dir, ".git"), "gitdir: "+evilGitDir+"\n")
		}, ""},
		{"commondir file", func(t *testing.T, tree *Tree) {
			writeFile(t, filepath.Join(tree.gitDir, "commondir"), evilGitDir+"\n")
		}, "commondir file now leads to"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := newRepo(t, true)
			m := NewManager(t.TempDir(), nil)
			tree, err := m.Prepare(ctx, repo, "main", BranchName(int64(i+1), "links"))
			if err != nil {
				t.Fatal(err)
			}
			tt.rewrite(t, tree)
			writeFile(t, filepath.Join(tree.Dir, "stats.py"), "rewritten\n")
			diff, diffErr := tree.Diff(ctx)
			commit, commitErr := tree.Commit(ctx, "after rewrite")
			if tt.wantErr != "" {
				for _, err := range []error{diffErr, commitErr} {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Errorf("Diff/Commit after the rewrite: %v, want an error saying %q", err, tt.wantErr)
					}
				}
			} else {
				if diffErr != nil || !strings.Contains(diff, "+rewritten") || !strings.Contains(diff, "-def mean(xs):") {
					t.Errorf("Diff = %v\n%s\nwant the change against %s's base", diffErr, diff, repo)
				}
				if commitErr != nil {
					t.Fatalf("Commit: %v", commitErr)
				}
				if got := git(t, repo, "rev-parse", tree.Branch); got != commit {
					t.Errorf("branch %s of the real repository at %s, Commit returned %s", tree.Branch, got, commit)
				}
			}
			if ran := readMarks(t, log); len(ran) != 0 {
				t.Errorf("ticketd's git followed the rewritten link and ran %v", slices.Sorted(maps.Keys(ran)))
			}
			_, _ = plainGit(t, tree.Dir, "status", "--short")
			if ran := readMarks(t, log); !ran["fsmonitor"] {
				t.Errorf("negative control: plain git status in the tree did not reach the evil config (ran %v)", ran)
			}
			if err := m.Remove(ctx, tree, false); err != nil {
				t.Errorf("Remove: %v", err)
			}
			if _, err := os.Stat(evilGitDir); err != nil {
				t.Errorf("Remove touched the repository the link pointed at: %v", err)
			}
		})
	}
}

// TestHardeningBeatsRepoConfig pins each override against a repository
// config that sets the key: ticketd's git sees ticketd's value, plain git
// the repository's (negative control).
func TestHardeningBeatsRepoConfig(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	extra := filepath.Join(t.TempDir(), "extra.cfg")
	writeFile(t, extra, "[filter \"inc.with.dots\"]\n\tprocess = evil-included\n\trequired = true\n")
	git(t, repo, "config", "include.path", extra)
	want := map[string]string{}
	for _, kv := range hardening {
		want[kv[0]] = kv[1]
	}
	for _, k := range []string{"filter.evil.clean", "filter.evil.smudge", "filter.evil.process", "filter.inc.with.dots.process"} {
		want[k] = ""
	}
	want["filter.evil.required"] = "false"
	want["filter.inc.with.dots.required"] = "false"
	for k := range want {
		if strings.HasPrefix(k, "filter.inc") {
			continue
		}
		evilValue := "/tmp/evil-" + strings.ReplaceAll(k, ".", "-")
		switch k {
		case "commit.gpgSign", "tag.gpgSign", "log.showSignature", "filter.evil.required", "maintenance.auto", "core.quotePath":
			evilValue = "true"
		case "submodule.recurse", "core.fsmonitor":
			evilValue = "true"
		case "protocol.allow", "protocol.ext.allow", "protocol.file.allow":
			evilValue = "always"
		case "gc.auto":
			evilValue = "1"
		case "color.ui", "color.diff":
			evilValue = "always"
		case "diff.noprefix", "diff.mnemonicPrefix", "diff.relative":
			evilValue = "true"
		case "diff.srcPrefix", "diff.dstPrefix":
			evilValue = "x/"
		}
		git(t, repo, "config", "--add", k, evilValue)
	}
	dirs := repoDirs{GitDir: filepath.Join(repo, ".git"), CommonDir: filepath.Join(repo, ".git"), WorkTree: repo}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		got, err := dirs.git(ctx, nil, "config", "--get-all", k)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if err != nil || lines[len(lines)-1] != want[k] {
			t.Errorf("ticketd's git config %s = %q (%v); want last value %q", k, got, err, want[k])
		}
		plain, _ := plainGit(t, repo, "config", "--get-all", k)
		plainLines := strings.Split(strings.TrimSuffix(plain, "\n"), "\n")
		if last := plainLines[len(plainLines)-1]; last == want[k] {
			t.Errorf("negative control: plain git config %s = %q, already ticketd's value", k, plain)
		}
	}
}

// TestHardenedEnv: ticketd's git inherits only allowlisted variables; API
// keys, tokens and GIT_* variables of the daemon's environment are dropped.
func TestHardenedEnv(t *testing.T) {
	drop := map[string]string{
		"OPENAI_API_KEY":        "sk-test-not-for-git",
		"GITHUB_TOKEN":          "ghp_test",
		"TICKETD_API_KEY":       "k",
		"GIT_DIR":               "/elsewhere",
		"GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='/tmp/x'",
		"GIT_EXTERNAL_DIFF":     "/tmp/x",
		"GIT_SSH_COMMAND":       "/tmp/x",
		"LD_PRELOAD":            "/tmp/x.so",
	}
	for k, v := range drop {
		t.Setenv(k, v)
	}
	t.Setenv("HOME", t.TempDir())
	env := hardenedEnv(nil, "GIT_INDEX_FILE=/tmp/i")
	ours := map[string]bool{}
	for _, n := range envAllow {
		ours[n] = true
	}
	names := map[string]bool{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
		switch {
		case ours[name], strings.HasPrefix(name, "GIT_CONFIG_"), name == "GIT_INDEX_FILE":
		case slices.Contains([]string{"LC_ALL", "GIT_ATTR_NOSYSTEM", "GIT_TERMINAL_PROMPT", "GIT_ASKPASS", "GIT_PAGER", "GIT_EDITOR", "GIT_ALLOW_PROTOCOL", "GIT_OPTIONAL_LOCKS"}, name):
		default:
			t.Errorf("unexpected variable in git's environment: %s", kv)
		}
	}
	for k := range drop {
		if names[k] {
			t.Errorf("git's environment keeps %s", k)
		}
		if _, ok := os.LookupEnv(k); !ok {
			t.Errorf("negative control: %s is not in the test process's environment", k)
		}
	}
	if !names["HOME"] || !names["PATH"] || !slices.Contains(env, "GIT_CONFIG_GLOBAL=/dev/null") || !slices.Contains(env, "GIT_CONFIG_NOSYSTEM=1") {
		t.Errorf("git's environment lacks HOME, PATH or the config switches:\n%s", strings.Join(env, "\n"))
	}
}

func TestFilterConfig(t *testing.T) {
	tests := []struct {
		out  string
		want []string // driver names overridden
	}{
		{"", nil},
		{"filter.lfs.clean\ngit-lfs clean -- %f\x00filter.lfs.smudge\ngit-lfs smudge -- %f\x00filter.lfs.required\x00", []string{"lfs"}},
		{"filter.a.b.c.process\nx\x00", []string{"a.b.c"}},
		{"filter.we=ird name\".clean\nx\x00", []string{`we=ird name"`}},
		{"filter.clean\nx\x00", nil}, // no subsection: no driver
	}
	for _, tt := range tests {
		var got []string
		for _, kv := range filterConfig(tt.out) {
			name := strings.TrimPrefix(kv[0][:strings.LastIndexByte(kv[0], '.')], "filter.")
			if !slices.Contains(got, name) {
				got = append(got, name)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("filterConfig(%q) overrides %q, want %q", tt.out, got, tt.want)
		}
	}
}

func FuzzFilterConfig(f *testing.F) {
	f.Add("filter.lfs.clean\ngit-lfs clean -- %f\x00filter.lfs.required\x00")
	f.Add("filter.a.b.c.process\nx\x00filter.\x00filter..clean\n\x00")
	f.Fuzz(func(t *testing.T, out string) {
		cfg := filterConfig(out)
		if len(cfg)%4 != 0 {
			t.Fatalf("filterConfig(%q) = %q: not four overrides per driver", out, cfg)
		}
		for _, kv := range cfg {
			if !strings.HasPrefix(kv[0], "filter.") {
				t.Fatalf("filterConfig(%q) overrides %q", out, kv[0])
			}
		}
	})
}

func TestConfigMayHaveFilters(t *testing.T) {
	tests := []struct {
		config string
		want   bool
	}{
		{"[core]\n\tbare = false\n", false},
		{"[filter \"lfs\"]\n\tclean = x\n", true},
		{"[Filter \"lfs\"]\n\tclean = x\n", true},
		{"[include]\n\tpath = other.cfg\n", true},
		{"[includeIf \"gitdir:/x/\"]\n\tpath = other.cfg\n", true},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "config"), tt.config)
		d := repoDirs{GitDir: dir, CommonDir: dir, WorkTree: dir}
		if got := d.configMayHaveFilters(); got != tt.want {
			t.Errorf("configMayHaveFilters(%q) = %v, want %v", tt.config, got, tt.want)
		}
	}
	// A worktree's own config.worktree counts too.
	common, gitDir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(gitDir, "config.worktree"), "[filter \"x\"]\n\tsmudge = y\n")
	if !(repoDirs{GitDir: gitDir, CommonDir: common}).configMayHaveFilters() {
		t.Errorf("configMayHaveFilters missed a filter in config.worktree")
	}
}
