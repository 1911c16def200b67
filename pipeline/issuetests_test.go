package pipeline

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// issueRepo is a repository with tests in tests/ (a class and functions) and in a package.
func issueRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"tests/test_money.py":         "import pytest\n\n\nclass TestRound:\n    def test_half_up(self):\n        pass\n\n    def helper(self):\n        def test_nested():\n            pass\n\n\n@pytest.mark.parametrize('x', [1, 2])\ndef test_format(x):\n    pass\n",
		"tests/test_other.py":         "def test_empty():\n    pass\n",
		"src/shop/tests/test_cart.py": "async def test_empty():\n    pass\n\n\ndef test_total():\n    pass\n",
		"src/shop/cart.py":            "def test_not_a_test_module():\n    pass\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestIssueTests(t *testing.T) {
	dir := issueRepo(t)
	tests := []struct {
		name, text string
		want       []string
	}{
		{"node id", "Running tests/test_money.py::TestRound::test_half_up fails on 3.12.", []string{"tests/test_money.py::TestRound::test_half_up"}},
		{"pytest summary line with parameters", "FAILED tests/test_money.py::test_format[2] - AssertionError: '2.0' != '2'", []string{"tests/test_money.py::test_format[2]"}},
		{"node id under another checkout's path", "FAILED /home/ana/src/shop/tests/test_money.py::test_format", []string{"tests/test_money.py::test_format"}},
		{"node id that does not exist", "tests/test_money.py::test_nope and tests/test_gone.py::test_x", nil},
		{"traceback frame", "Traceback (most recent call last):\n  File \"/ci/build/src/shop/tests/test_cart.py\", line 5, in test_total\n    assert total([]) == 0", []string{"src/shop/tests/test_cart.py::test_total"}},
		{"pytest short frame", "tests/test_money.py:5: in test_half_up\n    assert round_half(0.5) == 1", []string{"tests/test_money.py::TestRound::test_half_up"}},
		{"section header", "_____________ TestRound.test_half_up _____________\n\nself = <...>", []string{"tests/test_money.py::TestRound::test_half_up"}},
		{"bare name, unique", "test_half_up started failing after the upgrade", []string{"tests/test_money.py::TestRound::test_half_up"}},
		{"bare name in two files", "test_empty fails", []string{"tests/test_other.py::test_empty", "src/shop/tests/test_cart.py::test_empty"}},
		{"nested def and non-test module are not tests", "test_nested and test_not_a_test_module", nil},
		{"no test named", "The total is wrong for an empty cart.", nil},
		{"windows path", `FAILED tests\test_other.py::test_empty`, []string{"tests/test_other.py::test_empty"}},
	}
	for _, tt := range tests {
		got := IssueTests(dir, tt.text, nil)
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: IssueTests(%q) = %q; want %q", tt.name, tt.text, got, want)
		}
	}
}

func TestTestFunctions(t *testing.T) {
	src := "import x\n\nclass TestA:\n    def test_one(self):\n        def test_inner():\n            pass\n\n    async def test_two(self):\n        pass\n\nVALUE = 1\n\ndef test_three():\n    pass\n\nclass Helper:\n    pass\n\n    # a comment\ndef test_four(): pass\n"
	got := TestFunctions("t/test_a.py", []byte(src))
	want := []string{"t/test_a.py::TestA::test_one", "t/test_a.py::TestA::test_two", "t/test_a.py::test_three", "t/test_a.py::test_four"}
	if !slices.Equal(got, want) {
		t.Errorf("TestFunctions = %q; want %q", got, want)
	}
}

// FuzzIssueTests: issue text is written by anyone; IssueTests must never panic, and every id
// it returns names a test module of the repository.
func FuzzIssueTests(f *testing.F) {
	for _, s := range []string{"tests/test_money.py::TestRound::test_half_up", "File \"a/tests/test_cart.py\", line 1, in test_total",
		"____ A.test_x ____", "test_empty", "x.py::y[", "::::", "test_"} {
		f.Add(s)
	}
	dir := t0Repo(f)
	f.Fuzz(func(t *testing.T, text string) {
		for _, id := range IssueTests(dir, text, nil) {
			file, _, _ := strings.Cut(id, "::")
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(file))); err != nil {
				t.Fatalf("IssueTests(%q) returned %q, whose file does not exist", text, id)
			}
		}
	})
}

// FuzzTestFunctions: test modules are code under test; the scan must not panic on any input.
func FuzzTestFunctions(f *testing.F) {
	f.Add([]byte("class TestA:\n    def test_x(self):\n        pass\n"))
	f.Add([]byte("def test_y(\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, id := range TestFunctions("t/test_a.py", src) {
			if len(id) <= len("t/test_a.py::") {
				t.Fatalf("TestFunctions gave a short id %q", id)
			}
		}
	})
}

// t0Repo is issueRepo for a fuzz target.
func t0Repo(f *testing.F) string {
	dir := f.TempDir()
	for name, content := range map[string]string{
		"tests/test_money.py":         "class TestRound:\n    def test_half_up(self):\n        pass\n",
		"src/shop/tests/test_cart.py": "def test_total():\n    pass\n\ndef test_empty():\n    pass\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	return dir
}
