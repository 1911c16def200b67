package store

import (
	"testing"
	"time"
)

func TestBaselineSaveLoadPrune(t *testing.T) { forEachEngine(t, testBaselineSaveLoadPrune) }

func testBaselineSaveLoadPrune(t *testing.T, e engine) {
	b := e.setup(t)
	ctx := b.ctx
	if _, ok, err := b.s.LoadBaseline(ctx, "calc", "abc", "h1"); err != nil || ok {
		t.Fatalf("LoadBaseline on an empty table = ok %v, err %v; want false, nil", ok, err)
	}
	want := Baseline{Repo: "calc", BaseCommit: "abc", ChecksHash: "h1", Results: `[{"name":"pytest"}]`, Flaky: `["pytest: t::a"]`, Duration: 1500 * time.Millisecond}
	if err := b.s.SaveBaseline(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := b.s.SaveBaseline(ctx, Baseline{Repo: "calc", BaseCommit: "abc", ChecksHash: "h2", Results: `[]`}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		repo, base, hash string
		ok               bool
		results          string
	}{
		{"calc", "abc", "h1", true, want.Results},
		{"calc", "abc", "h2", true, `[]`},
		{"calc", "abd", "h1", false, ""},
		{"other", "abc", "h1", false, ""},
	} {
		got, ok, err := b.s.LoadBaseline(ctx, tc.repo, tc.base, tc.hash)
		t.Logf("LoadBaseline(%s, %s, %s) = ok %v results %q", tc.repo, tc.base, tc.hash, ok, got.Results)
		if err != nil || ok != tc.ok || got.Results != tc.results {
			t.Errorf("LoadBaseline(%s, %s, %s) = ok %v, results %q, err %v; want ok %v, results %q", tc.repo, tc.base, tc.hash, ok, got.Results, err, tc.ok, tc.results)
		}
	}
	got, _, _ := b.s.LoadBaseline(ctx, "calc", "abc", "h1")
	if got.Uses != 2 || got.Flaky != want.Flaky || got.Duration != want.Duration {
		t.Errorf("second load: uses %d, flaky %q, duration %v; want 2, %q, %v", got.Uses, got.Flaky, got.Duration, want.Flaky, want.Duration)
	}

	b.clock.Advance(48 * time.Hour)
	if _, _, err := b.s.LoadBaseline(ctx, "calc", "abc", "h1"); err != nil { // h1 used now, h2 not for 48h
		t.Fatal(err)
	}
	n, err := b.s.PruneBaselines(ctx, 24*time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("PruneBaselines(24h) = %d, %v; want 1 (the unused h2)", n, err)
	}
	if _, ok, _ := b.s.LoadBaseline(ctx, "calc", "abc", "h2"); ok {
		t.Error("h2 survived the prune")
	}
	if _, ok, _ := b.s.LoadBaseline(ctx, "calc", "abc", "h1"); !ok {
		t.Error("h1, used within 24h, was pruned")
	}
	if err := b.s.SaveBaseline(ctx, Baseline{Repo: "calc"}); err == nil {
		t.Error("SaveBaseline without base commit and hash succeeded")
	}
}
