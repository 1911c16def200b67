// Package timing tells where one attempt's time went: waiting on the model, running the
// checks, git, starting the checks' sandbox, and the store's writes. The daemon puts a Spent
// in the attempt's context; the places that do the work add the time of each call around
// the real call, so the split is measured where it happens, not inferred. Without a Spent in
// the context every call is a no-op.
package timing

import (
	"context"
	"sync/atomic"
	"time"
)

// Part is one kind of work an attempt's time goes to. The parts do not nest: each is timed
// around calls that contain none of the others.
type Part int

const (
	// ModelWait is the model endpoint's exchanges (retries and their backoff included).
	ModelWait Part = iota
	// Checks is the check processes' run time (pytest, ruff, mypy), from their start to exit.
	Checks
	// Git is the git commands of the attempt's worktree and repository.
	Git
	// SandboxStart is a check's preparation before its process runs and its cleanup after:
	// scratch folder, git view, environment, command, spawning the sandbox, removing the
	// scratch folder.
	SandboxStart
	// Store is the store's write transactions, the wait for the single writer included.
	Store
	numParts
)

// Spent sums the time of each part. Safe for concurrent use: an attempt's reviewers run
// at once.
type Spent struct {
	d [numParts]atomic.Int64
}

type key struct{}

// With returns ctx carrying s: the calls made with it add their time to s.
func With(ctx context.Context, s *Spent) context.Context {
	return context.WithValue(ctx, key{}, s)
}

// From is the Spent ctx carries, nil when none.
func From(ctx context.Context) *Spent {
	s, _ := ctx.Value(key{}).(*Spent)
	return s
}

// Add adds d to part p of ctx's Spent; without one it does nothing.
func Add(ctx context.Context, p Part, d time.Duration) {
	if s := From(ctx); s != nil {
		s.Add(p, d)
	}
}

// Since adds the time since start to part p of ctx's Spent. Use as
// `defer timing.Since(ctx, timing.Git, time.Now())`.
func Since(ctx context.Context, p Part, start time.Time) {
	if s := From(ctx); s != nil {
		s.Add(p, time.Since(start))
	}
}

// Add adds d to part p.
func (s *Spent) Add(p Part, d time.Duration) {
	if p < 0 || p >= numParts || d <= 0 {
		return
	}
	s.d[p].Add(int64(d))
}

// Get is part p's total so far.
func (s *Spent) Get(p Part) time.Duration {
	if p < 0 || p >= numParts {
		return 0
	}
	return time.Duration(s.d[p].Load())
}

// Split is a Spent in seconds, as the attempt's record keeps it.
type Split struct {
	ModelWaitS    float64 `json:"model_wait_s"`
	ChecksS       float64 `json:"checks_s"`
	GitS          float64 `json:"git_s"`
	SandboxStartS float64 `json:"sandbox_start_s"`
	StoreS        float64 `json:"store_s"`
}

// Split is s's totals so far; the zero Split for a nil s.
func (s *Spent) Split() Split {
	if s == nil {
		return Split{}
	}
	sec := func(p Part) float64 { return s.Get(p).Seconds() }
	return Split{ModelWaitS: sec(ModelWait), ChecksS: sec(Checks), GitS: sec(Git), SandboxStartS: sec(SandboxStart), StoreS: sec(Store)}
}

// Plus is the part-wise sum of a and b (a ticket's attempts together).
func (a Split) Plus(b Split) Split {
	return Split{ModelWaitS: a.ModelWaitS + b.ModelWaitS, ChecksS: a.ChecksS + b.ChecksS, GitS: a.GitS + b.GitS,
		SandboxStartS: a.SandboxStartS + b.SandboxStartS, StoreS: a.StoreS + b.StoreS}
}

// Total is the sum of the parts.
func (a Split) Total() float64 {
	return a.ModelWaitS + a.ChecksS + a.GitS + a.SandboxStartS + a.StoreS
}
