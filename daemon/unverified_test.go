package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// An unverified attempt is not repeated blind: a maker that fixes the code but never adds a
// test gets its first attempt ended unverified; the second is told what was missing, its
// submits without a test are refused before any check runs, and when it ends unverified with
// the same patch again the ticket escalates at once, its third attempt never paid for. The
// report shows the patch as complete and the next step.
func TestUnverifiedNotRepeatedBlind(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	root := t.TempDir()
	kv := kvstoreRepo(t, root)
	codeOnly := fixPatch(t, kv.path, map[string][2]string{"kvstore.py": {`line.split("=")`, `line.split("=", 1)`}})
	cfg := realConfig(t, root, scriptedServer(t, []scriptedmodel.Case{{Match: kv.title, Patch: codeOnly}}), kv)
	cfg.Night.MaxAttempts = 3
	n := runNight(t, cfg, 0)

	tk := ticketByRepo(t, n.store, kv.name)
	if tk.State != store.StateEscalated || tk.Attempts != 2 || !strings.Contains(tk.Reason, "the same patch as attempt 1, unverified again") {
		t.Fatalf("ticket %s after %d attempt(s) (%s); want escalated after 2: the same unverified patch twice", tk.State, tk.Attempts, tk.Reason)
	}
	calls, err := n.store.ToolCalls(context.Background(), tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	refusedFirst := 0
	for _, c := range calls {
		if c.Tool == "submit" && c.Attempt == 2 && strings.Contains(c.Result, "this change adds or changes no test either") {
			refusedFirst++
		}
	}
	if refusedFirst == 0 {
		t.Errorf("attempt 2's submits without a test were not refused before the checks")
	}
	mc, err := n.store.ModelCalls(context.Background(), tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	told := false
	for _, c := range mc {
		told = told || c.Attempt == 2 && c.Role == "maker"
	}
	if !told {
		t.Errorf("attempt 2 made no maker call")
	}
	report, _ := os.ReadFile(filepath.Join(tk.ResultDir, "report.md"))
	for _, want := range []string{"The complete change (it passes the checks", "`ticketctl accept "} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}

	// The report's next step works: accept publishes the kept unverified patch as the fix.
	res, err := Accept(context.Background(), n.store, cfg, tk.ID, AcceptOptions{Who: "alice"})
	if err != nil {
		t.Fatalf("ticketctl accept %d, as the report says: %v", tk.ID, err)
	}
	done, err := n.store.Get(context.Background(), tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.State != store.StateDone || done.Branch != res.Branch || res.By != "alice" {
		t.Fatalf("after accept: %s on %q (accepted by %q); want done on %s by alice", done.State, done.Branch, res.By, res.Branch)
	}
	if files := strings.TrimSpace(git(t, kv.path, "diff", "--name-only", "main", res.Branch)); files != "kvstore.py" {
		t.Errorf("the accepted fix branch changes %q; want the kept patch, kvstore.py", files)
	}
}
