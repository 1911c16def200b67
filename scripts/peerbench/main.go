// Command peerbench measures ticketd's queue cycle (Enqueue + Claim + Complete, with every
// event and fence token it records) against goqite's (Send + Receive + Delete) on the same
// machine, interleaved, and prints the median cycles per second of each and their ratio.
//
// With -postgres URL it compares ticketd's PostgreSQL engine with River instead (see
// postgres.go). It lives in its own module so neither goqite nor River ever enters
// ticketd's dependencies:
//
//	cd scripts/peerbench && go run . -rounds 7 -duration 2s
//
// Both queues run on the same SQLite driver (modernc.org/sqlite) with WAL and
// synchronous=NORMAL, one writer connection, each in a fresh database file per run. The
// order of the two alternates every round (ABBA) so drift in machine load hits both alike;
// the machine is shared, so read the spread, not only the median. CPU per cycle (user +
// system time of the process) is printed beside each rate: under load it disturbs less.
// goqite's database/sql transactions wake helper goroutines that run on a second core, so
// `GOMAXPROCS=1 go run .` compares the two on one core's work alone.
package main

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"maragu.dev/goqite"
	_ "modernc.org/sqlite"

	"github.com/ticketd/ticketd/store"
)

// goqiteSchema is schema_sqlite.sql of maragu.dev/goqite v0.4.0, verbatim.
//
//go:embed goqite_schema.sql
var goqiteSchema string

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(1)
	}
}

type config struct {
	rounds         int
	duration       time.Duration
	goroutines     []int
	goqitePageSize int
	dir            string
	only           string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("peerbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var gs string
	fs.IntVar(&c.rounds, "rounds", 7, "interleaved rounds per goroutine count (median taken; at least 5)")
	fs.DurationVar(&c.duration, "duration", 2*time.Second, "length of each timed run")
	fs.StringVar(&gs, "goroutines", "1,3", "comma-separated goroutine counts")
	fs.IntVar(&c.goqitePageSize, "goqite-page-size", 4096, "page size of goqite's database (SQLite's default 4096; ticketd creates 2048)")
	fs.StringVar(&c.only, "only", "", "run only this queue (ticketd or goqite), for profiling one side; prints no ratio")
	fs.StringVar(&c.dir, "dir", "", "directory for the database files (default: a new temporary directory)")
	var pg pgConfig
	fs.StringVar(&pg.url, "postgres", "", "compare ticketd's PostgreSQL engine with River on the server at this `URL` (see postgres.go)")
	fs.IntVar(&pg.procs, "procs", 2, "with -postgres: processes the goroutines are spread over")
	fs.BoolVar(&pg.latency, "latency", false, "with -postgres: time single claims behind -history finished tickets instead")
	fs.IntVar(&pg.history, "history", 100_000, "with -latency: finished tickets (River: completed jobs) behind the claims")
	fs.IntVar(&pg.samples, "samples", 500, "with -latency: claims timed")
	fs.StringVar(&pg.riverMode, "river-complete", "batch", "with -postgres: how River records a completion: batch (its completer, as shipped) or tx (the worker's own transaction, river.JobCompleteTx)")
	fs.StringVar(&pg.fetch, "ticketd-fetch", "ride", "with -drain: how ticketd's goroutines complete and claim: ride (a process's goroutines share fetches, and each complete rides on its worker's next fetch: store.Fetcher.EndAndClaim), shared (shared fetches, each complete alone, as a daemon's workers do) or claim (each its own Store.Claim and Complete)")
	fs.DurationVar(&pg.gather, "ticketd-gather", time.Millisecond, "with -drain, unless -ticketd-fetch claim: how long a fetch may wait for all of its process's goroutines to ask (store.Fetcher.Gather; River's fetch cooldown here is its minimum, 1 ms); 0 fetches at once")
	fs.IntVar(&pg.drain, "drain", 0, "with -postgres: time draining `N` tickets (jobs) enqueued beforehand, River's own shape, instead of cycles")
	var cf childFlags
	addChildFlags(fs, &cf)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cf.queue != "" {
		return runChild(ctx, cf, c.duration, os.Stdin, stdout)
	}
	if pg.url != "" {
		if !isFlagSet(fs, "goroutines") {
			gs = "1,8"
		}
		return pg.run(ctx, c, gs, stdout)
	}
	if c.only != "" && c.only != "ticketd" && c.only != "goqite" {
		return fmt.Errorf("-only %q: want ticketd or goqite", c.only)
	}
	if c.rounds < 5 && c.only == "" {
		return fmt.Errorf("-rounds %d: want at least 5 for a median", c.rounds)
	}
	var err error
	if c.goroutines, err = parseGoroutines(gs, "1,3"); err != nil {
		return err
	}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "peerbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		c.dir = d
	}

	fmt.Fprintf(stdout, "peerbench: %d rounds of %v per queue, goroutines %v, goqite page size %d\n",
		c.rounds, c.duration, c.goroutines, c.goqitePageSize)
	for _, g := range c.goroutines {
		if err := c.compare(ctx, g, stdout); err != nil {
			return err
		}
	}
	return nil
}

// parseGoroutines reads -goroutines, comma-separated positive counts; example is the list
// the error suggests.
func parseGoroutines(gs, example string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(gs, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 1 {
			return nil, fmt.Errorf("-goroutines %q: want positive integers like %s", gs, example)
		}
		out = append(out, n)
	}
	return out, nil
}

// run checks the flags of the PostgreSQL comparison and runs it.
func (pg pgConfig) run(ctx context.Context, c config, gs string, stdout io.Writer) error {
	pg.rounds, pg.duration = c.rounds, c.duration
	var err error
	if pg.goroutines, err = parseGoroutines(gs, "1,8"); err != nil {
		return err
	}
	if pg.rounds < 5 && !pg.latency {
		return fmt.Errorf("-rounds %d: want at least 5 for a median", pg.rounds)
	}
	if pg.fetch != "ride" && pg.fetch != "shared" && pg.fetch != "claim" {
		return fmt.Errorf("-ticketd-fetch %q: want ride, shared or claim", pg.fetch)
	}
	if pg.riverMode != "batch" && pg.riverMode != "tx" {
		return fmt.Errorf("-river-complete %q: want batch or tx", pg.riverMode)
	}
	return runPostgres(ctx, pg, stdout)
}

// compare runs c.rounds interleaved rounds of both queues (or c.only) with g goroutines,
// alternating which goes first so that neither always meets a warmer machine, and prints
// each round and the medians.
func (c config) compare(ctx context.Context, g int, stdout io.Writer) error {
	var td, gq, ratios, tdCPU, gqCPU []float64
	for r := range c.rounds {
		got, err := c.round(ctx, g, r)
		if err != nil {
			return err
		}
		if c.only != "" {
			fmt.Fprintf(stdout, "  goroutines=%d round %d: %s %6.0f cycles/s, %v CPU/cycle\n", g, r+1, c.only,
				got[c.only].rate, got[c.only].cpuPerOp.Round(time.Microsecond))
			continue
		}
		t, q := got["ticketd"], got["goqite"]
		td, gq = append(td, t.rate), append(gq, q.rate)
		tdCPU, gqCPU = append(tdCPU, float64(t.cpuPerOp)), append(gqCPU, float64(q.cpuPerOp))
		ratios = append(ratios, t.rate/q.rate)
		fmt.Fprintf(stdout, "  goroutines=%d round %d: ticketd %6.0f cycles/s (%v CPU/cycle)  goqite %6.0f cycles/s (%v CPU/cycle)  ratio %.2f\n",
			g, r+1, t.rate, t.cpuPerOp.Round(time.Microsecond), q.rate, q.cpuPerOp.Round(time.Microsecond), t.rate/q.rate)
	}
	if c.only != "" {
		return nil
	}
	mt, mg := median(td), median(gq)
	fmt.Fprintf(stdout, "goroutines=%d: ticketd median %.0f cycles/s (%.0f-%.0f), goqite median %.0f cycles/s (%.0f-%.0f)\n",
		g, mt, slices.Min(td), slices.Max(td), mg, slices.Min(gq), slices.Max(gq))
	fmt.Fprintf(stdout, "goroutines=%d: CPU per cycle: ticketd median %v, goqite median %v (goqite/ticketd %.2f)\n",
		g, time.Duration(median(tdCPU)).Round(time.Microsecond), time.Duration(median(gqCPU)).Round(time.Microsecond),
		median(gqCPU)/median(tdCPU))
	fmt.Fprintf(stdout, "goroutines=%d: ticketd/goqite = %.2f (ratio of medians), %.2f (median of per-round ratios)\n",
		g, mt/mg, median(ratios))
	return nil
}

// round runs round r (0-based) of each queue with g goroutines on a fresh database, by
// queue name; odd rounds run goqite first.
func (c config) round(ctx context.Context, g, r int) (map[string]result, error) {
	order := []string{"ticketd", "goqite"}
	if r%2 == 1 {
		slices.Reverse(order)
	}
	got := map[string]result{}
	for _, name := range order {
		if c.only != "" && name != c.only {
			continue
		}
		path := filepath.Join(c.dir, fmt.Sprintf("%s-g%d-r%d.db", name, g, r))
		var res result
		var err error
		if name == "ticketd" {
			res, err = benchTicketd(ctx, path, g, c.duration)
		} else {
			res, err = benchGoqite(ctx, path, g, c.duration, c.goqitePageSize)
		}
		if err != nil {
			return nil, fmt.Errorf("%s with %d goroutines, round %d: %w", name, g, r+1, err)
		}
		removeDB(path)
		got[name] = res
	}
	return got, nil
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func removeDB(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// timed runs cycle from g goroutines for d and returns cycles per second.
func timed(g int, d time.Duration, cycle func(worker, i int) error) (result, error) {
	var (
		n     atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	start, cpu0 := time.Now(), cpuTime()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if err := cycle(w, i); err != nil {
					errMu.Lock()
					first = cmpErr(first, err)
					errMu.Unlock()
					stop.Store(true)
					return
				}
				n.Add(1)
			}
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return result{
		rate:     float64(n.Load()) / time.Since(start).Seconds(),
		cpuPerOp: (cpuTime() - cpu0) / time.Duration(max(n.Load(), 1)),
	}, first
}

// result is one timed run: cycles per second of wall time, and the process's CPU time
// (user + system) per cycle, which other load on a shared machine disturbs less.
type result struct {
	rate     float64
	cpuPerOp time.Duration
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// benchTicketd is BenchmarkQueueCycle's cycle: enqueue, claim, complete.
func benchTicketd(ctx context.Context, path string, g int, d time.Duration) (result, error) {
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return result{}, err
	}
	defer s.Close()
	return timed(g, d, func(w, i int) error {
		worker := fmt.Sprint("w", w)
		if _, _, err := s.Enqueue(ctx, store.NewTicket{Source: "bench", ExternalID: fmt.Sprint(w, "-", i)}); err != nil {
			return err
		}
		l, err := s.Claim(ctx, worker, time.Minute)
		if err != nil {
			return err
		}
		return s.Complete(ctx, l.Ticket.ID, l.Token, store.Result{})
	})
}

// benchGoqite is goqite's own benchmark cycle: send, receive, delete.
func benchGoqite(ctx context.Context, path string, g int, d time.Duration, pageSize int) (result, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)" +
		fmt.Sprintf("&_pragma=page_size(%d)", pageSize) +
		"&_journal_mode=WAL&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	// goqite's README: one connection for SQLite.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if _, err := db.ExecContext(ctx, goqiteSchema); err != nil {
		return result{}, fmt.Errorf("goqite schema: %w", err)
	}
	q := goqite.New(goqite.NewOpts{DB: db, Name: "bench", Timeout: time.Minute})
	return timed(g, d, func(w, i int) error {
		if err := q.Send(ctx, goqite.Message{Body: []byte("yo")}); err != nil {
			return err
		}
		m, err := q.Receive(ctx)
		if err != nil {
			return err
		}
		if m == nil {
			return errors.New("goqite receive: no message right after a send")
		}
		return q.Delete(ctx, m.ID)
	})
}
