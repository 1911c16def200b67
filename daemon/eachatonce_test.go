package daemon

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestEachAtOnce: the night's whole-suite groups run side by side up to the width, never
// more, and every group runs once.
func TestEachAtOnce(t *testing.T) {
	tests := []struct {
		name         string
		items, width int
		wantPeak     int
	}{
		{"one at a time", 4, 1, 1},
		{"width 3 over 5 groups", 5, 3, 3},
		{"fewer groups than the width", 2, 3, 2},
		{"width 0 runs one at a time", 3, 0, 1},
		{"no groups", 0, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := make([]int, tt.items)
			for i := range items {
				items[i] = i
			}
			var running, peak atomic.Int32
			reached := make(chan struct{}) // closed once wantPeak run at once
			var once sync.Once
			seen := make([]atomic.Int32, tt.items)
			eachAtOnce(items, tt.width, func(i int) {
				n := running.Add(1)
				defer running.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if int(n) == tt.wantPeak {
					once.Do(func() { close(reached) })
				}
				select { // hold the first ones until the width is reached
				case <-reached:
				case <-time.After(10 * time.Second):
					t.Errorf("item %d: %d at once never reached (peak %d)", i, tt.wantPeak, peak.Load())
				}
				seen[i].Add(1)
			})
			if int(peak.Load()) != tt.wantPeak {
				t.Errorf("peak = %d at once, want %d", peak.Load(), tt.wantPeak)
			}
			for i := range seen {
				if seen[i].Load() != 1 {
					t.Errorf("item %d ran %d times, want 1", i, seen[i].Load())
				}
			}
		})
	}
}
