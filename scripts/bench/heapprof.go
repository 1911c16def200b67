package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// heapProfileEnv names a folder: when set, the large case's night 1 writes there the heap
// profile taken at the night's peak resident set (heap-peak.pb.gz, with a memstats line on
// stderr) and the night's allocations (allocs.pb.gz). For finding what grows with the
// repository; the figures the bench reports do not depend on it.
const heapProfileEnv = "TICKETD_BENCH_HEAPPROFILE"

// startHeapProfile samples the resident set every 50 ms during a night and rewrites the
// heap profile whenever it reaches a new peak. The returned stop ends the sampling and
// writes the allocation profile. Without the variable it does nothing.
func startHeapProfile() (stop func()) {
	dir := os.Getenv(heapProfileEnv)
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "heap profile: %v\n", err)
		return func() {}
	}
	runtime.MemProfileRate = 64 << 10
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var peak float64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			rss := currentRSSMB()
			if rss < peak+1 {
				continue
			}
			peak = rss
			heapProfile(filepath.Join(dir, "heap-peak.pb.gz"), "heap")
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(os.Stderr, "heap profile: rss %.1f MB heap_inuse %.1f MB heap_alloc %.1f MB heap_sys %.1f MB next_gc %.1f MB stack %.1f MB goroutines %d\n",
				rss, mb(ms.HeapInuse), mb(ms.HeapAlloc), mb(ms.HeapSys), mb(ms.NextGC), mb(ms.StackInuse), runtime.NumGoroutine())
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		heapProfile(filepath.Join(dir, "allocs.pb.gz"), "allocs")
	}
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// heapProfile writes the named profile to path (waitprofile.go), saying so on stderr when it
// cannot: a profile is the measurer's aid, never a reason to fail the bench.
func heapProfile(path, name string) {
	if err := writeProfile(name, path); err != nil {
		fmt.Fprintf(os.Stderr, "heap profile: %v\n", err)
	}
}

// currentRSSMB is this process's VmRSS in MB (0 where /proc is missing).
func currentRSSMB() float64 { return procStatusMB("VmRSS:") }
