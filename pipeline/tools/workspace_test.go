package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func setup(t *testing.T) (*Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "pkg"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "pkg", "a.py"), []byte("def f(x):\n    return x + 1\n\ndef g(x):\n    return x + 1\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o644))
	outside := t.TempDir()
	must(os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	must(os.Symlink(outside, filepath.Join(dir, "escape")))
	must(os.Symlink(filepath.Join(dir, "pkg"), filepath.Join(dir, "inner")))
	w, err := NewWorkspace(dir)
	must(err)
	return w, dir
}

func TestResolveConfinement(t *testing.T) {
	w, _ := setup(t)
	tests := []struct {
		path    string
		wantErr bool
	}{
		{"pkg/a.py", false},
		{"./pkg/../README.md", false},
		{"new/dir/file.py", false},
		{"inner/a.py", false},
		{"../etc/passwd", true},
		{"/etc/passwd", true},
		{"pkg/../../x", true},
		{"escape/secret.txt", true},
		{"escape/new.txt", true},
		{".git/config", true},
		{"", true},
	}
	for _, tt := range tests {
		_, err := w.Resolve(tt.path)
		if (err != nil) != tt.wantErr {
			t.Errorf("Resolve(%q) error = %v, wantErr %v", tt.path, err, tt.wantErr)
		}
	}
}

func TestEditFile(t *testing.T) {
	tests := []struct {
		name, old, new, wantErr, wantFile string
	}{
		{name: "unique", old: "def f(x):\n    return x + 1", new: "def f(x):\n    return x + 2",
			wantFile: "def f(x):\n    return x + 2\n\ndef g(x):\n    return x + 1\n"},
		{name: "ambiguous", old: "    return x + 1", new: "", wantErr: "matches 2 places in pkg/a.py, at lines 2, 5"},
		{name: "missing", old: "def f(y):", new: "", wantErr: "closest block is lines 1-1"},
		{name: "empty old", old: "", new: "x", wantErr: "old_text is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, dir := setup(t)
			_, err := w.EditFile(context.Background(), "pkg/a.py", tt.old, tt.new, false)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("EditFile error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "pkg", "a.py"))
			if string(got) != tt.wantFile {
				t.Errorf("file = %q, want %q", got, tt.wantFile)
			}
		})
	}
}

func TestWriteFileNeedsRead(t *testing.T) {
	w, dir := setup(t)
	if _, err := w.WriteFile(context.Background(), "README.md", "x"); err == nil || !strings.Contains(err.Error(), "was not read") {
		t.Fatalf("overwrite unread file: err = %v", err)
	}
	if _, err := w.ReadFiles(context.Background(), []ReadRequest{{Path: "README.md"}, {Path: "missing.py"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteFile(context.Background(), "README.md", "new"); err != nil {
		t.Fatalf("overwrite read file: %v", err)
	}
	if _, err := w.WriteFile(context.Background(), "tests/test_new.py", "def test(): pass\n"); err != nil {
		t.Fatalf("create file: %v", err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "tests", "test_new.py"))
	if string(got) != "def test(): pass\n" {
		t.Errorf("created file = %q", got)
	}
}

func TestExec(t *testing.T) {
	w, _ := setup(t)
	tests := []struct {
		tool, args, want, wantErr string
	}{
		{tool: ReadFiles, args: `{"paths":["pkg/a.py","nope.py"]}`, want: "=== pkg/a.py (5 lines)"},
		{tool: ReadFiles, args: `{"paths":["nope.py"]}`, want: "nope.py: error: no such file"},
		{tool: ListFiles, args: `{}`, want: "pkg/a.py"},
		{tool: Grep, args: `{"pattern":"def g"}`, want: "pkg/a.py:4: def g(x):"},
		{tool: Grep, args: `{"pattern":"("}`, wantErr: "pattern"},
		{tool: EditFile, args: `{"path":"pkg/a.py","old_text":`, wantErr: "not valid JSON"},
		{tool: EditFile, args: `{"path":"pkg/a.py","old":"x","new":"y"}`, wantErr: "not valid JSON"},
		{tool: "rm_rf", args: `{}`, wantErr: "unknown tool"},
		// Shapes models send. Two objects run together are two calls in one: refused, not
		// the first run alone and reported done.
		{tool: ReadFiles, args: `{"paths":["pkg/a.py"]}{"paths":["nope.py"]}`, wantErr: "more than one JSON value"},
		{tool: ReadFiles, args: `{"paths":["pkg/a.py"]} I will now read the file.`, wantErr: "more than one JSON value"},
		{tool: ReadFiles, args: `{"paths":["pkg/a.py"]}}`, wantErr: "more than one JSON value"},
		{tool: ReadFiles, args: "{\"paths\":[\"pkg/a.py\"]}\n", want: "=== pkg/a.py (5 lines)"},
		{tool: ReadFiles, args: "```json\n{\"paths\":[\"pkg/a.py\"]}\n```", want: "=== pkg/a.py (5 lines)"},
		{tool: ReadFiles, args: `"{\"paths\":[\"pkg/a.py\"]}"`, want: "=== pkg/a.py (5 lines)"},
		{tool: ListFiles, args: ``, want: "pkg/a.py"},
		{tool: ListFiles, args: `"pkg"`, wantErr: "not valid JSON"},
	}
	for _, tt := range tests {
		got, err := w.Exec(context.Background(), tt.tool, tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Exec(%s, %s) error = %v, want %q", tt.tool, tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !strings.Contains(got, tt.want) {
			t.Errorf("Exec(%s, %s) = %q, %v; want containing %q", tt.tool, tt.args, got, err, tt.want)
		}
	}
}

// TestMakerToolsFixedOrder: the tools come in one order; ask_human only when asking is on
// (budget.max_questions above 0), run_checks only when the repository has checks to run.
func TestMakerToolsFixedOrder(t *testing.T) {
	tests := []struct {
		ask, checks bool
		want        []string
	}{
		{true, true, []string{ReadFiles, ListFiles, Grep, EditFile, WriteFile, RunChecks, Submit, AskHuman}},
		{false, true, []string{ReadFiles, ListFiles, Grep, EditFile, WriteFile, RunChecks, Submit}},
		{true, false, []string{ReadFiles, ListFiles, Grep, EditFile, WriteFile, Submit, AskHuman}},
		{false, false, []string{ReadFiles, ListFiles, Grep, EditFile, WriteFile, Submit}},
	}
	for _, tt := range tests {
		var got []string
		for _, tool := range MakerTools(tt.ask, tt.checks) {
			got = append(got, tool.Function.Name)
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("MakerTools(%v, %v) = %v, want %v", tt.ask, tt.checks, got, tt.want)
		}
	}
}

// TestRunReportsRung: the tool-call record gets the rung through Run; Exec keeps its text.
func TestRunReportsRung(t *testing.T) {
	tests := []struct {
		name, args, wantRung, wantText string
	}{
		{"exact", `{"path":"pkg/a.py","old_text":"def f(x):\n    return x + 1","new_text":"def f(x):\n    return x + 2"}`, "exact", "edited pkg/a.py at line 1 (-2 +2 lines)"},
		{"second function", `{"path":"pkg/a.py","old_text":"def g(x):\n    return x + 1","new_text":"def g(x):\n    return x * 2"}`, "exact", "edited pkg/a.py at line 4"},
		{"dedented", `{"path":"pkg/a.py","old_text":"  def f(x):\n      return x + 1\n","new_text":"  def f(x):\n      return x - 1\n"}`, "indent_shift", "Lines 1-2 now read:\ndef f(x):\n    return x - 1"},
		{"replace_all", `{"path":"pkg/a.py","old_text":"return x + 1","new_text":"return x","replace_all":true}`, "exact", "in 2 places (replace_all), at lines 2, 5"},
		{"missing field", `{"path":"pkg/a.py","old_text":"x"}`, "", "error: edit_file needs"},
		{"miss", `{"path":"pkg/a.py","old_text":"def h():\n    pass","new_text":"x"}`, "", "error: old_text was not found in pkg/a.py"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := setup(t)
			r, err := w.Run(context.Background(), EditFile, tt.args)
			text := r.Text
			if err != nil {
				text = "error: " + err.Error()
			}
			if string(r.Rung) != tt.wantRung || !strings.Contains(text, tt.wantText) {
				t.Errorf("Run(edit_file, %s) = rung %q, %q; want rung %q, text containing %q", tt.args, r.Rung, text, tt.wantRung, tt.wantText)
			}
		})
	}
}

// TestToolSchemasAreJSON: every parameter schema parses and is an object schema, and
// read_files still accepts plain string paths.
func TestToolSchemasAreJSON(t *testing.T) {
	for _, tool := range MakerTools(true, true) {
		var schema map[string]any
		if err := json.Unmarshal(tool.Function.Parameters.(json.RawMessage), &schema); err != nil {
			t.Errorf("%s: parameters are not JSON: %v", tool.Function.Name, err)
			continue
		}
		if schema["type"] != "object" {
			t.Errorf("%s: schema type = %v", tool.Function.Name, schema["type"])
		}
	}
	w, _ := setup(t)
	got, err := w.Exec(context.Background(), ReadFiles, `{"paths":["README.md"]}`)
	if err != nil || got != "=== README.md (1 lines)\nhello\n" {
		t.Errorf("plain string paths: %q, %v", got, err)
	}
}

// TestWrittenTracksToolWrites: the files the tools wrote are remembered as last written, and
// nothing else is: not what was only read, not a file a check wrote meanwhile.
func TestWrittenTracksToolWrites(t *testing.T) {
	w, dir := setup(t)
	ctx := context.Background()
	if _, err := w.Run(ctx, ReadFiles, `{"paths": ["pkg/a.py", "README.md"]}`); err != nil {
		t.Fatal(err)
	}
	if _, err := w.EditFile(ctx, "pkg/a.py", "def g(x):\n    return x + 1", "def g(x):\n    return x + 2", false); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteFile(ctx, "tests/test_a.py", "from pkg.a import g\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteFile(ctx, "tests/test_a.py", "from pkg.a import f, g\n"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "left-by-a-check.txt"), []byte("x"), 0o644)
	got := w.Written()
	if len(got) != 2 || got[0].Path != "pkg/a.py" || got[1].Path != "tests/test_a.py" {
		t.Fatalf("Written = %+v, want pkg/a.py and tests/test_a.py", got)
	}
	if !strings.Contains(string(got[0].Data), "return x + 2") || string(got[1].Data) != "from pkg.a import f, g\n" || got[1].Mode != 0o644 {
		t.Errorf("Written holds %q and %q (mode %v), not what was last written", got[0].Data, got[1].Data, got[1].Mode)
	}
}
