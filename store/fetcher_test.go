package store

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
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

// TestFetcherGathers: with Gather, a fetch waits for every worker to ask, so workers that
// ask one after another share one ClaimBatch; a worker whose peers stay away is served
// once the window has passed, not never.
func TestFetcherGathers(t *testing.T) { forEachEngine(t, testFetcherGathers) }

func testFetcherGathers(t *testing.T, e engine) {
	b := e.setup(t)
	const workers = 3
	for i := range workers + 1 {
		b.enqueue(t, fmt.Sprint("t", i))
	}
	// An hour's window: the test passes only if the third worker's ask, not the clock,
	// sends the fetch.
	f := NewFetcher(b.s, time.Minute).Gather(workers, time.Hour)
	var mu sync.Mutex
	var sizes []int
	b.s.claimBatchHook = func(i int) error {
		mu.Lock()
		defer mu.Unlock()
		if i == 0 {
			sizes = append(sizes, 0)
		}
		sizes[len(sizes)-1]++
		return nil
	}
	var wg sync.WaitGroup
	var served atomic.Int32 // a fetch that went early ends the wait below, and fails the test
	for i := range workers {
		w := fmt.Sprint("w", i)
		wg.Go(func() {
			l, err := f.Claim(b.ctx, w)
			served.Add(1)
			if err != nil {
				t.Errorf("%s: %v", w, err)
				return
			}
			checkBatchLease(t, b, l, w)
		})
		// Each asks only once the one before waits, so no two ask at the same moment. Until
		// the last asks, the fetch cannot go, so the count only grows.
		for i < workers-1 && waitingBehind(f) < i+1 && served.Load() == 0 {
			runtime.Gosched()
		}
	}
	wg.Wait()
	if len(sizes) != 1 || sizes[0] != workers {
		t.Errorf("fetches leased %v tickets; want one fetch of %d", sizes, workers)
	}

	lone := NewFetcher(b.s, time.Minute).Gather(workers, time.Millisecond)
	l, err := lone.Claim(b.ctx, "alone")
	if err != nil {
		t.Fatalf("a lone worker's claim: %v; want the last ticket once the window passed", err)
	}
	checkBatchLease(t, b, l, "alone")
	if len(sizes) != 2 || sizes[1] != 1 {
		t.Errorf("fetches leased %v tickets; want a second fetch of 1", sizes)
	}
}
