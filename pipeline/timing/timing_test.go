package timing

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestSpentSplit(t *testing.T) {
	tests := []struct {
		name string
		ctx  func(*Spent) context.Context
		adds []struct {
			p Part
			d time.Duration
		}
		want Split
	}{
		{
			name: "each part in its field",
			ctx:  func(s *Spent) context.Context { return With(context.Background(), s) },
			adds: []struct {
				p Part
				d time.Duration
			}{{ModelWait, 2 * time.Second}, {Checks, 3 * time.Second}, {Git, 500 * time.Millisecond}, {SandboxStart, 250 * time.Millisecond}, {Store, 100 * time.Millisecond}, {Git, 500 * time.Millisecond}},
			want: Split{ModelWaitS: 2, ChecksS: 3, GitS: 1, SandboxStartS: 0.25, StoreS: 0.1},
		},
		{
			name: "no Spent in the context: nothing counted",
			ctx:  func(*Spent) context.Context { return context.Background() },
			adds: []struct {
				p Part
				d time.Duration
			}{{Git, time.Second}},
		},
		{
			name: "negative durations and unknown parts are dropped",
			ctx:  func(s *Spent) context.Context { return With(context.Background(), s) },
			adds: []struct {
				p Part
				d time.Duration
			}{{Git, -time.Second}, {numParts, time.Second}, {Part(-1), time.Second}, {Store, time.Second}},
			want: Split{StoreS: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Spent{}
			ctx := tt.ctx(s)
			for _, a := range tt.adds {
				Add(ctx, a.p, a.d)
			}
			if got := s.Split(); got != tt.want {
				t.Errorf("Split() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSpentConcurrentAdds(t *testing.T) {
	s := &Spent{}
	ctx := With(context.Background(), s)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				Add(ctx, ModelWait, time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if got := s.Get(ModelWait); got != 800*time.Millisecond {
		t.Errorf("ModelWait = %v after 800 concurrent adds of 1ms, want 800ms", got)
	}
}

func TestSinceAndPlus(t *testing.T) {
	s := &Spent{}
	ctx := With(context.Background(), s)
	Since(ctx, Checks, time.Now().Add(-time.Second))
	if got := s.Get(Checks); got < time.Second {
		t.Errorf("Since a second ago added %v, want at least 1s", got)
	}
	var nilSpent *Spent
	if got := nilSpent.Split(); got != (Split{}) {
		t.Errorf("nil Spent's Split = %+v, want zero", got)
	}
	sum := Split{ModelWaitS: 1, GitS: 2}.Plus(Split{ModelWaitS: 1, StoreS: 0.5})
	if want := (Split{ModelWaitS: 2, GitS: 2, StoreS: 0.5}); sum != want || sum.Total() != 4.5 {
		t.Errorf("Plus = %+v (total %v), want %+v (total 4.5)", sum, sum.Total(), want)
	}
}
