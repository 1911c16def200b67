package store

import (
	"testing"
	"time"
)

func TestEnvironmentRecords(t *testing.T) { forEachEngine(t, testEnvironmentRecords) }

// The latest setup of a repository replaces the earlier one on the same node; a failure keeps
// its output; every repository and node is listed.
func testEnvironmentRecords(t *testing.T, e engine) {
	b := e.setup(t)
	ctx := b.ctx
	if got, err := b.s.Environments(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Environments on an empty table = %+v, %v", got, err)
	}
	built := time.UnixMilli(1_700_000_000_000).UTC()
	steps := []Environment{
		{Repo: "app", Key: "k1", OK: true, BuiltAt: built, Took: 12 * time.Second},
		{Repo: "app", Key: "k2", OK: false, Took: 3 * time.Second, Error: "setup of app failed at command 2", Output: "ERROR: No matching distribution found for shinyfmt==9.9"},
		{Repo: "lib", Node: "vm-2", Key: "k9", OK: true, Cached: true, BuiltAt: built},
	}
	for _, s := range steps {
		if err := b.s.RecordEnvironment(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.s.Environments(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("Environments = %+v, %v; want app (latest) and lib", got, err)
	}
	app, lib := got[0], got[1]
	if app.Repo != "app" || app.Node != b.s.Node() || app.Key != "k2" || app.OK || app.Took != 3*time.Second ||
		app.Output != steps[1].Output || app.Error != steps[1].Error || !app.BuiltAt.IsZero() || app.At.IsZero() {
		t.Errorf("app = %+v; want the failed setup that replaced k1", app)
	}
	if lib.Node != "vm-2" || !lib.OK || !lib.Cached || !lib.BuiltAt.Equal(built) {
		t.Errorf("lib = %+v", lib)
	}
	if err := b.s.RecordEnvironment(ctx, Environment{}); err == nil {
		t.Error("RecordEnvironment without a repo: no error")
	}
}
