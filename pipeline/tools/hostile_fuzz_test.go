package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzToolCall: a model's tool call, any name and arguments, run in the hostile worktree
// (setupHostile, fresh for each input), never panics or blocks, never changes the
// repository's .git or anything outside the worktree, and never answers with what only
// those hold (the secret in .git/config and outside).
func FuzzToolCall(f *testing.F) {
	for _, s := range []struct {
		tool    uint8
		a, b, c string
		all     bool
	}{
		{0, "pkg/a.py", "link_git/config", "", false},
		{1, "escape", "", "", false},
		{2, "SECRET|core", ".git", "", false},
		{3, "pkg/a.py", "x + 1", "x + 2", true},
		{3, "inner/a.py", "x + 1", "x + 2", false},
		{4, "link_etc/evil", "x", "", false},
		{4, ".git\u200d/config", "[core]\n", "", false},
		{5, `{"paths":["pkg/../.git/config", {"path": "escape/secret.txt", "start_line": 1}]}`, "", "", false},
		{6, `{"path":"chain1/x","content":"x","extra":1}`, "", "", false},
		{7, `{"path": "fifo", "old_text": "a", "new_text": "b"}`, "", "", false},
	} {
		f.Add(s.tool, s.a, s.b, s.c, s.all)
	}
	names := []string{ReadFiles, ListFiles, Grep, EditFile, WriteFile}
	f.Fuzz(func(t *testing.T, tool uint8, a, b, c string, all bool) {
		h := setupHostile(t)
		// A hard link to the outside file is a regular file of the worktree, readable by
		// design (TestHardLinkNotWrittenThrough): not what this target guards.
		if err := os.Remove(filepath.Join(h.dir, "hardlink.txt")); err != nil {
			t.Fatal(err)
		}
		var name, call string
		switch tool % 8 {
		case 0:
			name, call = ReadFiles, args("paths", []string{a, b})
		case 1:
			name, call = ListFiles, args("path", a)
		case 2:
			name, call = Grep, args("pattern", a, "path", b)
		case 3:
			name, call = EditFile, args("path", a, "old_text", b, "new_text", c, "replace_all", all)
		case 4:
			name, call = WriteFile, args("path", a, "content", b)
		default: // arguments as the model sent them, JSON or not
			name, call = names[int(tool)%len(names)], a
		}
		r, err := runWithin(t, h.w, name, call)
		out := r.Text
		if err != nil {
			out += err.Error()
		}
		if strings.Contains(out, secretToken) && !strings.Contains(a+b+c, secretToken) {
			t.Errorf("%s %s answered with the secret: %q", name, call, out)
		}
		for _, p := range []string{h.gitConfig, h.secret} {
			if data, err := os.ReadFile(p); err != nil || !strings.Contains(string(data), secretToken) {
				t.Errorf("%s %s changed %s: %q, %v", name, call, p, data, err)
			}
		}
		around := map[string][]string{h.outside: {"secret.txt"}, filepath.Join(h.dir, ".git"): {"HEAD", "config"}}
		// The worktree's folder and the outside one are siblings (t.TempDir): nothing else
		// may appear beside them.
		if parent := filepath.Dir(h.dir); parent == filepath.Dir(h.outside) {
			around[parent] = []string{filepath.Base(h.dir), filepath.Base(h.outside)}
			slices.Sort(around[parent])
		}
		for dir, want := range around {
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s left %s holding %q, want %q", name, call, dir, got, want)
			}
		}
	})
}
