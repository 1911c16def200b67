package store

import (
	"context"
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

	mu       sync.Mutex
	waiting  []*fetchWait // asked since the running fetch began
	fetching bool         // a waiter is leading a fetch
}

// fetchWait is one worker's request: its answer, or the order to lead the next fetch.
type fetchWait struct {
	worker string
	done   chan fetchAnswer // buffered: the leader never blocks on it
}

type fetchAnswer struct {
	lease Lease
	err   error
	lead  bool
}

// NewFetcher shares claims of leaseFor among the workers that call its Claim.
func NewFetcher(s *Store, leaseFor time.Duration) *Fetcher {
	return &Fetcher{s: s, leaseFor: leaseFor}
}

// Claim is Store.Claim for worker through the shared fetch: a lease, ErrNoTicket, or the
// fetch's error. Like every write, a fetch under way is not interrupted by ctx: a worker
// that asked gets what was claimed for it, and must work or end it as Claim's.
func (f *Fetcher) Claim(ctx context.Context, worker string) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, fmt.Errorf("claim for %s: %w", worker, err)
	}
	w := &fetchWait{worker: worker, done: make(chan fetchAnswer, 1)}
	f.mu.Lock()
	f.waiting = append(f.waiting, w)
	lead := !f.fetching
	f.fetching = true
	f.mu.Unlock()
	for {
		if lead {
			f.fetch(ctx)
		}
		a := <-w.done
		if !a.lead {
			return a.lease, a.err
		}
		lead = true
	}
}

// fetch claims for every worker waiting now, answers each, and passes the lead to the
// first worker that asked meanwhile (or ends the fetching when none did).
func (f *Fetcher) fetch(ctx context.Context) {
	f.mu.Lock()
	batch := f.waiting
	f.waiting = nil
	f.mu.Unlock()
	workers := make([]string, len(batch))
	for i, w := range batch {
		workers[i] = w.worker
	}
	leases, err := f.s.ClaimBatch(context.WithoutCancel(ctx), workers, f.leaseFor)
	for i, w := range batch {
		switch {
		case err != nil:
			w.done <- fetchAnswer{err: err}
		case i < len(leases):
			w.done <- fetchAnswer{lease: leases[i]}
		default:
			w.done <- fetchAnswer{err: ErrNoTicket}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.waiting) == 0 {
		f.fetching = false
		return
	}
	f.waiting[0].done <- fetchAnswer{lead: true}
}
