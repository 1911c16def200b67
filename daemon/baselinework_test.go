package daemon

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
)

// gatedChecks holds back the baseline of one repository until a worker has run checks on a
// ticket of another (or a minute has passed), and records the order of what happened.
type gatedChecks struct {
	inner    *validate.Runner
	slowRepo string // the repository whose baseline waits
	worked   chan struct{}
	once     sync.Once

	mu     sync.Mutex
	events []string
}

func (g *gatedChecks) record(e string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, e)
}

func (g *gatedChecks) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	base := filepath.Base(dir)
	baseline := strings.Contains(base, "-baseline-")
	switch {
	case baseline && strings.HasPrefix(base, g.slowRepo+"-"):
		select {
		case <-g.worked:
		case <-time.After(time.Minute):
		case <-ctx.Done():
		}
		defer g.record("baseline " + g.slowRepo + " ended")
	case !baseline && strings.HasPrefix(base, g.slowRepo+"-"), len(checks) > 0 && checks[0].Name == sandboxProbeName:
	case !baseline:
		g.record("attempt checks in " + strings.SplitN(base, "-", 2)[0])
		g.once.Do(func() { close(g.worked) })
	}
	return g.inner.Run(ctx, dir, checks)
}

func (g *gatedChecks) Preflight(ctx context.Context, dir string, c validate.Check, seen *validate.Probed) error {
	return g.inner.Preflight(ctx, dir, c, seen)
}

// Baselines run beside the work: while one repository's baseline is still running, a worker
// already works on a ticket of another whose baseline is ready; both tickets end done.
func TestBaselinesRunBesideWork(t *testing.T) {
	t.Parallel() // a night of its own: repositories, store, model server, clock
	realNight(t)
	root := t.TempDir()
	kv, mean := kvstoreRepo(t, root), meanRepo(t, root)
	cases := []scriptedmodel.Case{{Match: kv.title, Patch: kv.patch}, {Match: mean.title, Patch: mean.patch}}
	cfg := realConfig(t, root, scriptedServer(t, cases), kv, mean)
	checks := &gatedChecks{inner: checkRunner(cfg, "", slog.New(slog.NewTextHandler(io.Discard, nil))), slowRepo: "kvstore", worked: make(chan struct{})}
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Checks: checks}
	if _, err := d.RunNight(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []realRepo{kv, mean} {
		if tk := ticketByRepo(t, st, r.name); tk.State != store.StateDone {
			t.Errorf("%s: ticket %s (%s); want done", r.name, tk.State, tk.Reason)
		}
	}
	checks.mu.Lock()
	defer checks.mu.Unlock()
	worked, ended := -1, -1
	for i, e := range checks.events {
		switch {
		case e == "attempt checks in mean" && worked < 0:
			worked = i
		case e == "baseline kvstore ended":
			ended = i
		}
	}
	if worked < 0 || ended < 0 || worked > ended {
		t.Errorf("events %q: want an attempt in mean before kvstore's baseline ended", checks.events)
	}
}
