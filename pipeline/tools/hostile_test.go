package tools

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostile is a worktree laid out the way an attacker (a committed repository, code under
// test, or a model) could lay it out, plus the outside files it must never reach.
type hostile struct {
	w                 *Workspace
	dir, outside      string
	gitConfig, secret string
}

const secretToken = "SECRET_TOKEN_d41d8cd9"

func setupHostile(t *testing.T) hostile {
	t.Helper()
	dir := t.TempDir()
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, []byte(s), 0o644))
	}
	write(filepath.Join(dir, "pkg", "a.py"), "def f(x):\n    return x + 1\n")
	write(filepath.Join(dir, "README.md"), "hello\n")
	write(filepath.Join(dir, ".git", "config"), "[core]\n\t# "+secretToken+"\n")
	write(filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(filepath.Join(dir, "sub", ".git"), "gitdir: ../.git/modules/sub\n")
	write(filepath.Join(dir, "sub", "mod.py"), "x = 1\n")
	write(filepath.Join(dir, "\u0430lmost", "x.py"), "y = 2\n")            // Cyrillic "а": a lookalike, allowed
	write(filepath.Join(dir, ".g\u0456t", "config"), "lookalike = true\n") // ".gіt" with a Cyrillic "і"
	write(filepath.Join(outside, "secret.txt"), secretToken+"\n")
	links := map[string]string{
		"link_git":     ".git",
		"link_git_abs": filepath.Join(dir, ".git"),
		"link_parent":  "..",
		"link_etc":     "/etc",
		"link_passwd":  "/etc/passwd",
		"escape":       outside,
		"inner":        "pkg",
		"loop1":        "loop2",
		"loop2":        "loop1",
		"selfloop":     "selfloop",
		"dirloop":      ".",
		"devnull":      "/dev/null",
		"pkg/deep":     "../../..",
		"pkg/up_git":   "../sub/.git",
		"chain1":       "chain2",
		"chain2":       "pkg/deep",
	}
	for name, dest := range links {
		must(os.Symlink(dest, filepath.Join(dir, name)))
	}
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(syscall.Mkfifo(filepath.Join(dir, "pkg", "pipe.py"), 0o644))
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	must(err)
	t.Cleanup(func() { l.Close() })
	must(os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "hardlink.txt")))
	w, err := NewWorkspace(dir)
	must(err)
	return hostile{w: w, dir: dir, outside: outside,
		gitConfig: filepath.Join(dir, ".git", "config"), secret: filepath.Join(outside, "secret.txt")}
}

func args(kv ...any) string {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// runWithin runs one tool call and fails the test if it does not return: a FIFO or a device
// must never block a tool.
func runWithin(t *testing.T, w *Workspace, tool, a string) (Result, error) {
	t.Helper()
	type out struct {
		r   Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := w.Run(context.Background(), tool, a)
		ch <- out{r, err}
	}()
	select {
	case o := <-ch:
		return o.r, o.err
	case <-time.After(2 * time.Minute): // a hang is the failure under test, not a timing assertion
		t.Fatalf("%s %s did not return: it is blocked", tool, a)
		return Result{}, nil
	}
}

func TestHostileInputsRefused(t *testing.T) {
	h := setupHostile(t)
	long := strings.Repeat("a/", 2600) + "x.py"
	tests := []struct {
		name, tool, args, want string
	}{
		{"symlink to .git, read", ReadFiles, args("paths", []string{"link_git/config"}), "reaches a .git directory"},
		{"symlink to .git, write", WriteFile, args("path", "link_git/config", "content", "x"), "reaches a .git directory"},
		{"symlink to .git, edit", EditFile, args("path", "link_git/config", "old_text", "[core]", "new_text", "x"), "reaches a .git directory"},
		{"absolute symlink to .git", ReadFiles, args("paths", []string{"link_git_abs/HEAD"}), "reaches a .git directory"},
		{"symlink to a submodule's .git", ReadFiles, args("paths", []string{"pkg/up_git"}), "reaches a .git directory"},
		{".GIT/config read", ReadFiles, args("paths", []string{".GIT/config"}), "reaches a .git directory"},
		{".GIT/config write", WriteFile, args("path", ".GIT/config", "content", "x"), "reaches a .git directory"},
		{".Git/hooks write", WriteFile, args("path", ".Git/hooks/pre-commit", "content", "#!/bin/sh\n"), "reaches a .git directory"},
		{"nested .git write", WriteFile, args("path", "pkg/.git/config", "content", "x"), "reaches a .git directory"},
		{".git with trailing dot", ReadFiles, args("paths", []string{".git./config"}), "reaches a .git directory"},
		{"submodule .git file read", ReadFiles, args("paths", []string{"sub/.git"}), "reaches a .git directory"},
		{"submodule .git file write", WriteFile, args("path", "sub/.git", "content", "gitdir: /etc\n"), "reaches a .git directory"},
		{".git via ..", ReadFiles, args("paths", []string{"pkg/../.git/config"}), "reaches a .git directory"},
		// Issue 31: what HFS+ or NTFS would read as .git, which git and fsck --strict refuse.
		{".git with a zero-width joiner", WriteFile, args("path", ".git\u200d/config", "content", "[core]\n"), "would take for .git"},
		{".git after a zero-width non-joiner", WriteFile, args("path", "pkg/\u200c.GIT/hooks/post-checkout", "content", "#!/bin/sh\n"), "would take for .git"},
		{".git with a byte-order mark", WriteFile, args("path", ".g\ufeffit/config", "content", "x"), "would take for .git"},
		{".git with a data stream", WriteFile, args("path", ".git::$INDEX_ALLOCATION/config", "content", "x"), "would take for .git"},
		{".git with a trailing space", WriteFile, args("path", "pkg/.git /config", "content", "x"), ".git"},
		{"git~1 short name", WriteFile, args("path", "GIT~1/config", "content", "x"), "git"},
		{"list .git", ListFiles, args("path", ".git"), "reaches a .git directory"},
		{"grep in .GIT", Grep, args("pattern", "core", "path", ".GIT"), "reaches a .git directory"},
		{"symlink to parent", ReadFiles, args("paths", []string{"link_parent/secret.txt"}), "outside the worktree"},
		{"symlink to /etc", ReadFiles, args("paths", []string{"link_etc/passwd"}), "outside the worktree"},
		{"write through symlink to /etc", WriteFile, args("path", "link_etc/evil", "content", "x"), "outside the worktree"},
		{"symlink to /etc/passwd", ReadFiles, args("paths", []string{"link_passwd"}), "outside the worktree"},
		{"symlinked dir pointing outside, read", ReadFiles, args("paths", []string{"escape/secret.txt"}), "outside the worktree"},
		{"symlinked dir pointing outside, create", WriteFile, args("path", "escape/new.txt", "content", "x"), "outside the worktree"},
		{"relative symlink climbing out", ReadFiles, args("paths", []string{"pkg/deep/etc/passwd"}), "outside the worktree"},
		{"chain of symlinks climbing out", WriteFile, args("path", "chain1/x", "content", "x"), "outside the worktree"},
		{"symlink to /dev/null", WriteFile, args("path", "devnull", "content", "x"), "outside the worktree"},
		{"list through symlink to /etc", ListFiles, args("path", "link_etc"), "outside the worktree"},
		{"grep through symlink to /etc", Grep, args("pattern", "root", "path", "link_etc"), "outside the worktree"},
		{"FIFO read", ReadFiles, args("paths", []string{"fifo"}), "named pipe (FIFO), not a regular file"},
		{"FIFO with a .py name", ReadFiles, args("paths", []string{"pkg/pipe.py"}), "named pipe (FIFO)"},
		{"FIFO edit", EditFile, args("path", "fifo", "old_text", "a", "new_text", "b"), "named pipe (FIFO)"},
		{"FIFO write", WriteFile, args("path", "fifo", "content", "x"), "named pipe (FIFO)"},
		{"socket read", ReadFiles, args("paths", []string{"sock"}), "a socket, not a regular file"},
		{"symlink loop", ReadFiles, args("paths", []string{"loop1"}), "symlink loop"},
		{"self symlink", WriteFile, args("path", "selfloop/x", "content", "x"), "symlink loop"},
		{"absolute path", ReadFiles, args("paths", []string{"/etc/passwd"}), "absolute paths are refused"},
		{"absolute path write", WriteFile, args("path", "/tmp/x", "content", "x"), "absolute paths are refused"},
		{"dot-dot", ReadFiles, args("paths", []string{"../etc/passwd"}), "would climb above the repository root"},
		{"dot-dot after a dir", EditFile, args("path", "pkg/../../x", "old_text", "a", "new_text", "b"), "would climb above the repository root"},
		{"dot-dot after a missing dir", WriteFile, args("path", "new/../../x", "content", "x"), "would climb above the repository root"},
		{"NUL byte", ReadFiles, args("paths", []string{"pkg/a.py\x00.txt"}), "NUL byte"},
		{"tilde", ReadFiles, args("paths", []string{"~/.ssh/id_rsa"}), "\"~\" is not expanded"},
		{"windows dot-dot", ReadFiles, args("paths", []string{`..\..\etc\passwd`}), "contains a backslash"},
		{"drive letter", WriteFile, args("path", "C:/Windows/win.ini", "content", "x"), "drive letter"},
		{"very long path", ReadFiles, args("paths", []string{long}), "bytes long (limit 1024)"},
		{"very long name", WriteFile, args("path", strings.Repeat("n", 300)+".py", "content", "x"), "(limit 255)"},
		{"control character", WriteFile, args("path", "pkg/a\n.py", "content", "x"), "control character"},
		{"empty path", ReadFiles, args("paths", []string{""}), "empty path"},
		{"write through an inner symlink", WriteFile, args("path", "inner/a.py", "content", "x"), "goes through the symlink inner -> pkg"},
		{"edit through an inner symlink", EditFile, args("path", "inner/a.py", "old_text", "x + 1", "new_text", "x + 2"), "write to the real path pkg/a.py"},
		{"edit a directory", EditFile, args("path", "pkg", "old_text", "a", "new_text", "b"), "is a directory"},
		{"write a directory", WriteFile, args("path", "pkg", "content", "x"), "is a directory"},
		{"file used as a directory", ReadFiles, args("paths", []string{"pkg/a.py/x"}), "is a file, not a directory"},
		{"overwrite a hard link without reading", WriteFile, args("path", "hardlink.txt", "content", "x"), "was not read in this attempt"},
	}
	if len(tests) < 30 {
		t.Fatalf("only %d hostile inputs", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := runWithin(t, h.w, tt.tool, tt.args)
			got := r.Text
			if err != nil {
				got = "error: " + err.Error()
			}
			if !strings.Contains(got, "error: ") || !strings.Contains(got, tt.want) {
				t.Errorf("%s %s\n got: %q\nwant: an error containing %q", tt.tool, tt.args, got, tt.want)
			}
			if strings.Contains(got, secretToken) {
				t.Errorf("%s %s leaked the secret: %q", tt.tool, tt.args, got)
			}
		})
	}
	for _, p := range []string{h.gitConfig, h.secret} {
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), secretToken) {
			t.Errorf("%s was changed: %q, %v", p, data, err)
		}
	}
	for _, p := range []string{".GIT", ".Git", "pkg/.git", "C:", "new"} {
		if _, err := os.Lstat(filepath.Join(h.dir, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

// TestHostileAllowed pins what stays allowed: reads through symlinks that stay inside, a
// directory symlink loop walked textually, and unicode lookalikes of .git, which are other
// names to git and to the kernel.
func TestHostileAllowed(t *testing.T) {
	h := setupHostile(t)
	tests := []struct {
		name, tool, args, want string
	}{
		{"read through inner symlink", ReadFiles, args("paths", []string{"inner/a.py"}), "=== pkg/a.py (2 lines)"},
		{"directory symlink loop, read", ReadFiles, args("paths", []string{"dirloop/dirloop/dirloop/pkg/a.py"}), "=== pkg/a.py (2 lines)"},
		{"dot segments", ReadFiles, args("paths", []string{"./pkg/../README.md"}), "=== README.md (1 lines)"},
		{"lookalike .gіt (Cyrillic і)", ReadFiles, args("paths", []string{".g\u0456t/config"}), "lookalike = true"},
		{"lookalike write", WriteFile, args("path", "\u0430lmost/new.py", "content", "z = 3\n"), "created \u0430lmost/new.py"},
		{"submodule files are readable", ReadFiles, args("paths", []string{"sub/mod.py"}), "x = 1"},
		{"list skips .git, FIFOs named", ListFiles, args(), "fifo (a named pipe (FIFO))"},
		{"grep skips .git and submodule .git files", Grep, args("pattern", `\[core\]|gitdir|refs/heads`), "(no matches)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := runWithin(t, h.w, tt.tool, tt.args)
			if err != nil || !strings.Contains(r.Text, tt.want) {
				t.Errorf("%s %s\n got: %q, %v\nwant: containing %q", tt.tool, tt.args, r.Text, err, tt.want)
			}
		})
	}
	list, err := h.w.ListFiles(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{".git/", "sub/.git", "HEAD"} {
		if strings.Contains(list, bad) {
			t.Errorf("list_files shows %q:\n%s", bad, list)
		}
	}
}

// TestHardLinkNotWrittenThrough: a hard link to a file outside can be read (it is a regular
// file in the worktree), but writing replaces the worktree's entry, never the shared inode.
func TestHardLinkNotWrittenThrough(t *testing.T) {
	h := setupHostile(t)
	ctx := context.Background()
	if _, err := h.w.ReadFiles(ctx, []ReadRequest{{Path: "hardlink.txt"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.w.WriteFile(ctx, "hardlink.txt", "replaced\n"); err != nil {
		t.Fatalf("write after read: %v", err)
	}
	if got, _ := os.ReadFile(h.secret); string(got) != secretToken+"\n" {
		t.Errorf("outside file = %q, want it unchanged", got)
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, "hardlink.txt")); string(got) != "replaced\n" {
		t.Errorf("worktree file = %q", got)
	}
}

func TestWalksHonourContext(t *testing.T) {
	h := setupHostile(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tool := range []string{ListFiles, Grep, ReadFiles, EditFile, WriteFile} {
		a := map[string]string{ListFiles: `{}`, Grep: `{"pattern":"x"}`, ReadFiles: `{"paths":["pkg/a.py"]}`,
			EditFile: `{"path":"pkg/a.py","old_text":"x + 1","new_text":"x + 2"}`, WriteFile: `{"path":"n.py","content":"x"}`}[tool]
		if _, err := h.w.Run(ctx, tool, a); err == nil || !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("%s with a cancelled context: err = %v, want context canceled", tool, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, "pkg", "a.py")); !strings.Contains(string(got), "x + 1") {
		t.Errorf("cancelled edit changed the file: %q", got)
	}
}

// TestOpenRefusesSwappedSymlink: a path resolve found clean but that holds a symlink by the
// time it is opened (swapped in between) is refused by the open itself.
func TestOpenRefusesSwappedSymlink(t *testing.T) {
	h := setupHostile(t)
	for _, rel := range []string{"inner/a.py", "link_git/config", "escape/secret.txt"} {
		f, err := openInRoot(h.w.Root(), rel, os.O_RDONLY, 0)
		if err == nil {
			f.Close()
			t.Errorf("openInRoot(%q) opened it, want a refusal", rel)
			continue
		}
		t.Logf("openInRoot(%q): %v", rel, err)
	}
	if f, err := openInRoot(h.w.Root(), "pkg/a.py", os.O_RDONLY, 0); err != nil {
		t.Errorf("openInRoot(pkg/a.py): %v", err)
	} else {
		f.Close()
	}
}

// TestOddNamesShownQuoted: a repository's file name may hold a newline or bytes that are not
// UTF-8. Shown raw, "x.py\n(listing stopped...)" read as two entries of list_files, neither
// of which exists; such names are shown quoted and marked as names the tools cannot open.
// (grep, which opens what it searches, leaves them out.)
func TestOddNamesShownQuoted(t *testing.T) {
	dir := t.TempDir()
	names := []string{"plain.py", "odd\nname.py", "bad\xffname.py", "x.py\n(listing stopped at 2000 files; list a subdirectory)"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("needle = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	list, err := w.ListFiles(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(list, "\n"); len(lines) != len(names) {
		t.Errorf("list_files shows %d lines for %d files:\n%s", len(lines), len(names), list)
	}
	for _, want := range []string{`"odd\nname.py" (a name the tools cannot open)`, `"bad\xffname.py" (a name the tools cannot open)`, "plain.py"} {
		if !strings.Contains(list, want) {
			t.Errorf("list_files lacks %q:\n%s", want, list)
		}
	}
	if grep, err := w.Grep(context.Background(), "needle", ""); err != nil || grep != "plain.py:1: needle = 1" {
		t.Errorf("grep = %q, %v; want only plain.py's line", grep, err)
	}
}
