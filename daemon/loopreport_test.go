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

// A scripted doom loop is nudged at the third identical call and stopped at the fifth, and
// the morning report says both, with the stop reason "loop".
func TestLoopStopIsInTheReport(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 1)
	f.cases[0].Behaviour = scriptedmodel.BehaviourLoop
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	cfg.Night.MaxAttempts = 1
	cfg.Budget.MaxSteps = 12
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly)

	tk, err := n.store.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != store.StateEscalated {
		t.Fatalf("ticket state %s, want escalated", tk.State)
	}
	report, err := os.ReadFile(filepath.Join(cfg.Output, "1", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"loop guard: nudged after read_files repeated 3 times", "loop: read_files called 5 times"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(string(report), "repeated 5 times") {
		t.Errorf("report.md shows a nudge at the fifth call, which should have stopped the attempt:\n%s", report)
	}
}
