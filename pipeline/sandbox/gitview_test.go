package sandbox

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// gitRepo makes a repository with one commit at dir/repo and returns its path and the commit.
func gitRepo(t *testing.T, dir string) (string, string) {
	t.Helper()
	repo := filepath.Join(dir, "repo")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", repo},
		{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return repo, strings.TrimSpace(string(out))
}

func TestWriteGitView(t *testing.T) {
	tests := []struct {
		name    string
		head    func(hash string) string // HEAD's text; empty keeps git's own
		want    map[string]string        // file under the view's git directory -> content
		wantErr string
	}{
		{name: "branch", want: map[string]string{"HEAD": "ref: refs/heads/main\n", "refs/heads/main": "<hash>\n"}},
		{name: "detached", head: func(h string) string { return h + "\n" }, want: map[string]string{"HEAD": "<hash>\n"}},
		{name: "not a branch", head: func(string) string { return "ref: refs/tags/v1\n" }, wantErr: `HEAD names "refs/tags/v1", not a branch`},
		{name: "escape", head: func(string) string { return "ref: refs/heads/../../x\n" }, wantErr: "not a branch"},
		{name: "garbage", head: func(string) string { return "nonsense\n" }, wantErr: `HEAD is "nonsense", not a commit id`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			repo, hash := gitRepo(t, dir)
			if tt.head != nil {
				if err := os.WriteFile(filepath.Join(repo, ".git", "HEAD"), []byte(tt.head(hash)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			dest := filepath.Join(dir, "view")
			err := writeGitView(repo, dest)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("writeGitView() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("writeGitView() = %v", err)
			}
			tt.want["config"] = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
			for name, want := range tt.want {
				want = strings.ReplaceAll(want, "<hash>", hash)
				got, err := os.ReadFile(filepath.Join(dest, gitViewDir, name))
				if err != nil || string(got) != want {
					t.Errorf("%s = %q (%v), want %q", name, got, err, want)
				}
			}
			if _, err := os.Stat(filepath.Join(dest, gitViewDir, "index")); err != nil {
				t.Errorf("index not copied: %v", err)
			}
			link, _ := os.ReadFile(filepath.Join(dest, gitViewLink))
			if string(link) != "gitdir: "+InnerGitDir+"\n" {
				t.Errorf("%s = %q", gitViewLink, link)
			}
		})
	}
}

func TestGrantWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("grantWrite changes groups: runs as root only, as ticketd does when it uses it")
	}
	dir := t.TempDir()
	reports := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "pkg"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "pkg", "a.py"), nil, 0o644))
	must(os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "pkg", ".git"), nil, 0o644))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
	must(exec.Command("mkfifo", filepath.Join(dir, "fifo")).Run())
	must(os.WriteFile(filepath.Join(reports, "r.xml"), nil, 0o644))
	id := Identity{UID: 54321, GID: 54322}
	must(grantWrite(dir, reports, id))

	tests := []struct {
		path      string
		gid       int
		groupRW   bool
		setgidDir bool
	}{
		{path: dir, gid: id.GID, groupRW: true, setgidDir: true},
		{path: filepath.Join(dir, "pkg"), gid: id.GID, groupRW: true, setgidDir: true},
		{path: filepath.Join(dir, "pkg", "a.py"), gid: id.GID, groupRW: true},
		{path: filepath.Join(dir, ".git"), gid: 0},
		{path: filepath.Join(dir, ".git", "objects"), gid: 0},
		{path: filepath.Join(dir, "pkg", ".git"), gid: 0},
		{path: filepath.Join(dir, "link"), gid: 0},
		{path: filepath.Join(dir, "fifo"), gid: id.GID},
	}
	for _, tt := range tests {
		fi, err := os.Lstat(tt.path)
		must(err)
		gid := int(statOf(t, fi).Gid)
		rw := fi.Mode()&0o060 == 0o060
		sg := fi.Mode()&os.ModeSetgid != 0
		if gid != tt.gid || (tt.groupRW && !rw) || sg != tt.setgidDir {
			t.Errorf("%s: gid %d, mode %s; want gid %d, group rw %v, setgid %v", tt.path, gid, fi.Mode(), tt.gid, tt.groupRW, tt.setgidDir)
		}
	}
	for _, p := range []string{reports, filepath.Join(reports, "r.xml")} {
		fi, err := os.Lstat(p)
		must(err)
		if st := statOf(t, fi); int(st.Uid) != id.UID || int(st.Gid) != id.GID {
			t.Errorf("%s: owner %d:%d, want %s", p, st.Uid, st.Gid, id)
		}
	}
}

// TestGrantFollowsNoSymlink: the grant of a worktree (as root, to the checks' group) never
// changes a file outside it, whatever symlink code under test left or swaps in: a symlink
// to a file outside, and a folder the walk listed and then found swapped for a symlink to a
// folder outside holding a file of the same name. The files outside keep their group and
// mode.
func TestGrantFollowsNoSymlink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the grant changes groups: runs as root only, as ticketd does when it uses it")
	}
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "x")
	for _, p := range []string{filepath.Join(dir, "pkg", "x"), secret} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	modes := map[string]os.FileMode{}
	for _, p := range []string{secret, outside} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		modes[p] = fi.Mode()
	}
	id := Identity{UID: 54321, GID: 54322}
	if err := grantTree(dir, id); err != nil {
		t.Fatal(err)
	}
	// The walk listed pkg/x; pkg is now a symlink to the folder outside.
	if err := os.Rename(filepath.Join(dir, "pkg"), filepath.Join(dir, "pkg.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "pkg")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"pkg/x", "link", "pkg"} {
		if err := grantEntry(dir, rel, id.GID); err != nil {
			t.Errorf("grant %s: %v", rel, err)
		}
	}
	for _, p := range []string{secret, outside} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st, want := statOf(t, fi), modes[p]; st.Gid != 0 || fi.Mode() != want {
			t.Errorf("%s outside the worktree: gid %d, mode %s after the grant; want gid 0, mode %s", p, st.Gid, fi.Mode(), want)
		}
	}
	fi, err := os.Lstat(filepath.Join(dir, "pkg.old", "x"))
	if err != nil || statOf(t, fi).Gid != uint32(id.GID) || fi.Mode()&0o060 != 0o060 {
		t.Errorf("the worktree's own file: %v, %v; want it granted", fi.Mode(), err)
	}
}

func statOf(t *testing.T, fi os.FileInfo) *syscall.Stat_t {
	t.Helper()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("%s: no stat", fi.Name())
	}
	return st
}

// TestReadyForChecks checks out a real repository into a folder made ready for the checks
// (as worktree.Manager.Ready does for a root daemon): everything git writes is born in the
// checks' group and group-writable, so grantWrite has nothing to walk and changes no file's
// ctime (which would make git's next status read every file again).
func TestReadyForChecks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("ReadyForChecks changes groups and ACLs: runs as root only, as ticketd does when it uses it")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed (apt-get install git)")
	}
	id := Identity{UID: 54321, GID: 54322}
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	repo := t.TempDir()
	run(repo, "init", "-q", "-b", "main")
	for name, mode := range map[string]os.FileMode{"pkg/a.py": 0o644, "pkg/sub/b.py": 0o644, "run.sh": 0o755} {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), mode); err != nil {
			t.Fatal(err)
		}
	}
	run(repo, "add", ".")
	run(repo, "commit", "-q", "-m", "base")

	dir, err := os.MkdirTemp(t.TempDir(), "wt-") // 0700, as worktree.Manager makes it
	if err != nil {
		t.Fatal(err)
	}
	if err := ReadyForChecks(dir, id); err != nil {
		t.Skipf("this file system takes no POSIX ACLs: %v", err)
	}
	run(dir, "--git-dir="+filepath.Join(repo, ".git"), "--work-tree="+dir, "checkout", "-q", "main", "--", ".")

	ctimes := map[string]syscall.Timespec{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := statOf(t, fi)
		ctimes[p] = st.Ctim
		if int(st.Gid) != id.GID || fi.Mode()&0o060 != 0o060 || fi.IsDir() && fi.Mode()&os.ModeSetgid == 0 {
			t.Errorf("%s: gid %d, mode %s; want gid %d, group rw, folders setgid", p, st.Gid, fi.Mode(), id.GID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ctimes) != 6 {
		t.Fatalf("checked out %d entries, want 6 (the folder, pkg, pkg/sub and three files)", len(ctimes))
	}
	if !readyForChecks(dir, id.GID) {
		t.Fatal("readyForChecks = false on the folder ReadyForChecks made")
	}
	if err := grantWrite(dir, "", id); err != nil {
		t.Fatal(err)
	}
	for p, c := range ctimes {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if statOf(t, fi).Ctim != c {
			t.Errorf("%s: grantWrite changed its ctime on a ready worktree", p)
		}
	}

	// What is not ready is walked.
	notReady := []struct {
		name  string
		setup func(dir string) error
		gid   int
	}{
		{"another group's", func(string) error { return nil }, id.GID + 1},
		{"no default ACL", func(d string) error { return syscall.Removexattr(d, aclDefaultName) }, id.GID},
		{"not group-writable", func(d string) error { return os.Chmod(d, 0o750|os.ModeSetgid) }, id.GID},
		{"not setgid", func(d string) error { return os.Chmod(d, 0o770) }, id.GID},
	}
	for _, tt := range notReady {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			if err := ReadyForChecks(d, id); err != nil {
				t.Fatal(err)
			}
			if err := tt.setup(d); err != nil {
				t.Fatal(err)
			}
			if readyForChecks(d, tt.gid) {
				t.Errorf("readyForChecks = true")
			}
		})
	}
}
