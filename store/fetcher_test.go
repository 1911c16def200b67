package store

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestFetcherSharesOneFetch: workers that ask while a fetch is on its way are served by
// the next fetch together (one ClaimBatch); every ticket is leased exactly once, to a
// worker that asked, and the workers left over hear ErrNoTicket.
func TestFetcherSharesOneFetch(t *testing.T) { forEachEngine(t, testFetcherSharesOneFetch) }

func testFetcherSharesOneFetch(t *testing.T, e engine) {
	b := e.setup(t)
	const workers, tickets = 8, 5
	for i := range tickets {
		b.enqueue(t, fmt.Sprint("t", i))
	}
	f := NewFetcher(b.s, time.Minute)
	var batches int
	// The first fetch, w0's alone (the others ask only once it holds its first lease), holds
	// until every other worker waits behind it, so the second fetch serves the seven
	// together. Started together, several workers could join the first fetch, and the seven
	// it waits for would never come.
	first := make(chan struct{})
	b.s.claimBatchHook = func(i int) error {
		if i == 0 {
			batches++
			if batches == 1 {
				close(first)
				for waitingBehind(f) < workers-1 {
					runtime.Gosched()
				}
			}
		}
		return nil
	}
	type got struct {
		worker string
		l      Lease
		err    error
	}
	out := make(chan got, workers)
	var wg sync.WaitGroup
	for i := range workers {
		w := fmt.Sprint("w", i)
		wg.Go(func() {
			l, err := f.Claim(b.ctx, w)
			out <- got{w, l, err}
		})
		if i == 0 {
			<-first
		}
	}
	wg.Wait()
	close(out)
	leased := map[int64]string{}
	none := 0
	for g := range out {
		switch {
		case errors.Is(g.err, ErrNoTicket):
			none++
		case g.err != nil:
			t.Fatalf("%s: %v", g.worker, g.err)
		default:
			if prev, dup := leased[g.l.Ticket.ID]; dup {
				t.Fatalf("ticket %d leased to %s and %s", g.l.Ticket.ID, prev, g.worker)
			}
			leased[g.l.Ticket.ID] = g.worker
			checkBatchLease(t, b, g.l, g.worker)
		}
	}
	if len(leased) != tickets || none != workers-tickets {
		t.Errorf("%d tickets leased, %d workers told none; want %d and %d", len(leased), none, tickets, workers-tickets)
	}
	if batches != 2 {
		t.Errorf("%d fetches leased tickets; want 2 (the first worker's, then the seven waiting together)", batches)
	}
}

// waitingBehind is how many workers wait for f's next fetch.
func waitingBehind(f *Fetcher) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiting)
}
