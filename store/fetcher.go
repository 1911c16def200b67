package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Fetcher lets a node's workers share claims: workers that ask while a fetch is on its way
// wait for the next one, which claims for all of them in one ClaimBatch (one transaction,
// one commit), as River's producer fetches for its free workers. There is no fetching
// goroutine and no buffer: a fetch asks for exactly the workers waiting on it, and hands
// each lease to its worker, so no lease is ever fetched that no worker takes. The zero
// value is not usable: NewFetcher.
type Fetcher struct {
	s        *Store
	leaseFor time.Duration

	// gatherFor and gatherN: see Gather. arrived wakes a gathering leader when the last
	// worker asks (buffered: an ask never blocks on it, and a stale wake only rechecks).
	gatherFor time.Duration
	gatherN   int
	arrived   chan struct{}

	mu       sync.Mutex
	waiting  []*fetchWait // asked since the running fetch began
	fetching bool         // a waiter is leading a fetch
}

// fetchWait is one worker's request: its answer, or the order to lead the next fetch.
type fetchWait struct {
	worker string
	end    *Ending          // a plain complete riding on the fetch (EndAndClaim), or nil
	done   chan fetchAnswer // buffered: the leader never blocks on it
}

type fetchAnswer struct {
	state State // the ended ticket's, when end was written
	lease Lease
	err   error
	lead  bool
}

// NewFetcher shares claims of leaseFor among the workers that call its Claim.
func NewFetcher(s *Store, leaseFor time.Duration) *Fetcher {
	return &Fetcher{s: s, leaseFor: leaseFor, arrived: make(chan struct{}, 1)}
}

// Gather makes each fetch wait, at most within, until workers workers are asking, and
// returns f. Workers whose tickets take milliseconds come back just after a fetch has left
// without them; without a wait they alternate between half-full fetches, and each fetch is
// a commit. With it they share one statement and one commit, as River's producer batches
// through its fetch cooldown (at least 1 ms). A fetch goes as soon as all workers ask, so
// the wait costs a lone worker at most within, while the others are busy. For tickets that
// take minutes it gains nothing: the daemon does not gather. Call it before the first
// Claim; within <= 0 or workers < 2 turns gathering off.
func (f *Fetcher) Gather(workers int, within time.Duration) *Fetcher {
	if workers < 2 || within <= 0 {
		workers, within = 0, 0
	}
	f.gatherN, f.gatherFor = workers, within
	return f
}

// Claim is Store.Claim for worker through the shared fetch: a lease, ErrNoTicket, or the
// fetch's error. Like every write, a fetch under way is not interrupted by ctx: a worker
// that asked gets what was claimed for it, and must work or end it as Claim's.
func (f *Fetcher) Claim(ctx context.Context, worker string) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, fmt.Errorf("claim for %s: %w", worker, err)
	}
	a := f.ask(ctx, &fetchWait{worker: worker})
	return a.lease, a.err
}

// EndAndClaim ends worker's attempt as Store.EndAttempt(e) does, then claims its next
// ticket as Claim does. A plain complete (no artifacts) rides on the fetch: it is written
// in the same transaction as the leases of every worker asking with it, so workers that
// end and ask together commit once, as River's completer and producer batch theirs; any
// other ending is written alone first. It returns the ended ticket's new state and the
// next lease. The state is set when the ending was written, whatever the error: then
// ErrNoTicket says nothing is ready, and another error that the claim failed. Without a
// state the ending was not written and nothing was claimed: ErrLeaseLost when the
// attempt's lease had gone, as EndAttempt's.
func (f *Fetcher) EndAndClaim(ctx context.Context, worker string, e Ending) (State, Lease, error) {
	if !ridesOnFetch(e) {
		state, err := f.s.EndAttempt(ctx, e)
		if err != nil {
			return "", Lease{}, err
		}
		l, err := f.Claim(ctx, worker)
		return state, l, err
	}
	if err := ctx.Err(); err != nil {
		return "", Lease{}, fmt.Errorf("complete ticket %d for %s: %w", e.ID, worker, err)
	}
	a := f.ask(ctx, &fetchWait{worker: worker, end: &e})
	return a.state, a.lease, a.err
}

// ask queues w for the next fetch, leading it when none is under way, and returns w's
// answer.
func (f *Fetcher) ask(ctx context.Context, w *fetchWait) fetchAnswer {
	w.done = make(chan fetchAnswer, 1)
	f.mu.Lock()
	f.waiting = append(f.waiting, w)
	lead := !f.fetching
	f.fetching = true
	full := len(f.waiting) == f.gatherN
	f.mu.Unlock()
	if full && !lead {
		select {
		case f.arrived <- struct{}{}:
		default:
		}
	}
	for {
		if lead {
			f.fetch(ctx)
		}
		a := <-w.done
		if !a.lead {
			return a
		}
		lead = true
	}
}

// fetch claims for every worker waiting once it has gathered them (see Gather), writing
// the completes that ride on it, answers each, and passes the lead to the first worker
// that asked meanwhile (or ends the fetching when none did).
func (f *Fetcher) fetch(ctx context.Context) {
	f.gather()
	f.mu.Lock()
	batch := f.waiting
	f.waiting = nil
	f.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	parts := make([]*endClaim, len(batch))
	ends := false
	for i, w := range batch {
		parts[i] = &endClaim{worker: w.worker, end: w.end}
		ends = ends || w.end != nil
	}
	if ends {
		f.s.endAndClaim(ctx, parts, f.leaseFor)
	} else {
		f.claim(ctx, parts)
	}
	for i, w := range batch {
		w.done <- fetchAnswer{state: parts[i].state, lease: parts[i].lease, err: parts[i].err}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.waiting) == 0 {
		f.fetching = false
		return
	}
	f.waiting[0].done <- fetchAnswer{lead: true}
}

// gather waits, at most f.gatherFor, until f.gatherN workers are asking (see Gather).
func (f *Fetcher) gather() {
	if f.gatherFor <= 0 {
		return
	}
	var deadline <-chan time.Time
	for {
		f.mu.Lock()
		n := len(f.waiting)
		f.mu.Unlock()
		if n >= f.gatherN {
			return
		}
		if deadline == nil {
			t := time.NewTimer(f.gatherFor)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-f.arrived:
		case <-deadline:
			return
		}
	}
}

// claim is a fetch of claims only: one ClaimBatch for all of parts.
func (f *Fetcher) claim(ctx context.Context, parts []*endClaim) {
	workers := make([]string, len(parts))
	for i, p := range parts {
		workers[i] = p.worker
	}
	leases, err := f.s.ClaimBatch(ctx, workers, f.leaseFor)
	if errors.Is(err, ErrNoTicket) {
		err = nil // none leased: handOut tells each
	}
	handOut(parts, leases, err)
}
