package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestChecksWritesNeverReachTheBranch is issue 19's probe in a real night: the repository's
// conftest.py, run by every check, copies the environment into a new file, edits a tracked
// module and appends to the module the fix changes. The fix branch and the patch hold the
// maker's change alone, and the report lists what the checks wrote.
func TestChecksWritesNeverReachTheBranch(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 1)
	write(t, filepath.Join(f.repo, "conftest.py"), `import os

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "stolen.txt"), "w") as out:
    out.write(repr(dict(os.environ)))
for module in ("shop/catalogue_00.py", "shop/rule_00.py"):
    with open(os.path.join(here, module), "a") as out:
        out.write("\n# tampered by a check\n")
`)
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-q", "-m", "a conftest that writes")
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	tk, err := n.store.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != store.StateDone {
		t.Fatalf("ticket is %s, want done: %+v", tk.State, tk)
	}
	files := strings.TrimSpace(git(t, f.repo, "diff", "--name-only", "main", tk.Branch))
	if files != "shop/rule_00.py" {
		t.Errorf("the fix branch changes %q, want exactly the maker's shop/rule_00.py", files)
	}
	if diff := git(t, f.repo, "diff", "main", tk.Branch); strings.Contains(diff, "tampered") || strings.Contains(diff, "stolen") {
		t.Errorf("the fix branch holds what the checks wrote:\n%s", diff)
	}
	patch, _ := os.ReadFile(filepath.Join(cfg.Output, "1", "patch"))
	if !strings.Contains(string(patch), "shop/rule_00.py") || strings.Contains(string(patch), "tampered") || strings.Contains(string(patch), "stolen") {
		t.Errorf("the patch is not the maker's change alone:\n%s", patch)
	}
	report, _ := os.ReadFile(filepath.Join(cfg.Output, "1", "report.md"))
	if !strings.Contains(string(report), "The checks also wrote (discarded, not part of the change): shop/catalogue_00.py, shop/rule_00.py, stolen.txt") {
		t.Errorf("the report does not list what the checks wrote:\n%s", report)
	}
}
