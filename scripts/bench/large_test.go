package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/scripts/testenv"
)

// The generated large repository holds what its spec says, each bug's test fails at the base
// and passes with its fix, and the import scan ties each buggy module to its test file alone.
func TestGenerateLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a repository and runs its suite (long tier; run without -short)")
	}
	_, err := validate.ResolvePytest(context.Background())
	testenv.Need(t, testenv.Pytest, err)
	spec := largeSpec{Packages: 4, Modules: 10, Docs: 6, TestFiles: 5, SlowTests: 1, SlowSleep: time.Millisecond, Bugs: 1}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "bigshop")
	repo, err := generateLarge(ctx, dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", dir, "ls-files").Output()
	if err != nil {
		t.Fatal(err)
	}
	tracked := len(strings.Fields(string(out)))
	// 4 top files + per package an __init__ and its modules + docs + tests (2 bug tests, 5, 1 slow).
	wantFiles := 5 + spec.Packages*(1+spec.Modules) + spec.Docs + 2*spec.Bugs + spec.TestFiles + spec.SlowTests
	t.Logf("files %d (tracked %d), tests %d, bugs %d", repo.Files, tracked, repo.Tests, len(repo.Bugs))
	if repo.Files != wantFiles || tracked != wantFiles {
		t.Errorf("files %d, tracked %d; want %d", repo.Files, tracked, wantFiles)
	}
	if len(repo.Bugs) != 2*spec.Bugs || repo.Tests != 3*spec.TestFiles+spec.SlowTests+2*len(repo.Bugs) {
		t.Errorf("bugs %d, tests %d; want %d bugs and %d tests", len(repo.Bugs), repo.Tests, 2*spec.Bugs, 3*spec.TestFiles+spec.SlowTests+2*len(repo.Bugs))
	}
	graph, err := validate.ScanImports(dir)
	if err != nil {
		t.Fatal(err)
	}
	runner := &validate.Runner{Sandbox: testSandbox(t)}
	for _, b := range repo.Bugs {
		file, _, _ := strings.Cut(b.Test, "::")
		if got := graph.TestsAffectedBy([]string{b.Module}); !reflect.DeepEqual(got, []string{file}) {
			t.Errorf("tests affected by %s = %v; want [%s]", b.Module, got, file)
		}
		check := validate.Check{Name: "tests", Kind: validate.KindPytest, Only: []string{b.Test}}
		if res := runner.Run(ctx, dir, []validate.Check{check}); len(res) != 1 || res[0].Passed {
			t.Errorf("%s at the base: %+v; want a failure", b.Test, res)
		}
	}
	apply := exec.Command("git", "-C", dir, "apply", "-")
	apply.Stdin = strings.NewReader(repo.Bugs[0].Patch)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("apply fix: %v: %s", err, out)
	}
	all := runner.Run(ctx, dir, []validate.Check{{Name: "tests", Kind: validate.KindPytest}})
	t.Logf("whole suite after one fix: %s", all[0].Summary)
	if all[0].Tests != repo.Tests || len(all[0].Findings) != len(repo.Bugs)-1 {
		t.Errorf("whole suite after one fix: %d tests, %d failing (%s); want %d tests, %d failing", all[0].Tests, len(all[0].Findings), all[0].Summary, repo.Tests, len(repo.Bugs)-1)
	}
}

// --large-scale N multiplies the repository's packages, docs and tests, not its bugs.
func TestScaledLarge(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want largeSpec
	}{
		{1, defaultLarge},
		{0, defaultLarge},
		{2, largeSpec{Packages: 100, Modules: 90, Docs: 840, TestFiles: 220, SlowTests: 40, SlowSleep: defaultLarge.SlowSleep, Bugs: 3}},
	} {
		if got := scaledLarge(defaultLarge, tt.n); got != tt.want {
			t.Errorf("scaledLarge(%d) = %+v; want %+v", tt.n, got, tt.want)
		}
	}
}
