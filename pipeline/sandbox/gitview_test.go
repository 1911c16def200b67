package sandbox

import (
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

func statOf(t *testing.T, fi os.FileInfo) *syscall.Stat_t {
	t.Helper()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("%s: no stat", fi.Name())
	}
	return st
}
