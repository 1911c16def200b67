package main

// The PostgreSQL comparison: ticketd's queue on its PostgreSQL engine against River
// (riverqueue/river v0.51.2 on riverpgxv5), on the same server and the same driver (pgx v5),
// each run in a fresh schema, the two interleaved ABBA.
//
//	go run . -postgres 'postgres://postgres@127.0.0.1:5432/postgres' -rounds 7 -goroutines 1,8
//
// A cycle is one job in flight per goroutine: ticketd's Enqueue + Claim + Complete (each
// with its event, fence token and records, in the same transaction as the transition);
// River's Insert, then waiting until River has worked the job (a no-op worker) and
// recorded its completion: with -river-complete batch (River as shipped) its completer's
// write (EventKindJobCompleted, sent after it), with -river-complete tx the worker's own
// transaction (river.JobCompleteTx), durable when the cycle ends as ticketd's is.
// The goroutines run in up to -procs processes (this program re-run as children), each
// with its own store or River client: 8 goroutines are 4 in each of 2 processes. River's
// processes each work a queue of their own, so that each one's goroutines wait for their
// own jobs; ticketd's share one queue, so any process may claim any ticket.
//
// -drain N times River's own shape instead, where its batching counts: N tickets (jobs)
// enqueued beforehand, untimed, then worked (claimed and completed; River fetches up to
// its free workers per statement and completes up to 5,000 per statement; ticketd, with
// -ticketd-fetch ride, completes a process's tickets and leases their workers' next ones
// in one statement, store.Fetcher.EndAndClaim, each fetch waiting up to -ticketd-gather for
// all of the process's goroutines to ask, as River's producer waits out its 1 ms fetch
// cooldown) by the goroutines of every process, all on one queue, until the database says
// all N are done.
//
// -latency times single claims on a queue with 100k finished tickets (jobs) behind it:
// ticketd's Claim, and River's fetch (the driver's JobGetAvailable, the statement its
// producer runs), each of an only ready ticket, median and 90th percentile.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/ticketd/ticketd/store"
)

// pgConfig is the -postgres mode's flags.
type pgConfig struct {
	url        string
	rounds     int
	duration   time.Duration
	goroutines []int
	procs      int
	latency    bool
	history    int
	samples    int
	drain      int
	riverMode  string
	fetch      string
	gather     time.Duration
}

// childReport is what a child process prints when its timed run ends.
type childReport struct {
	Cycles int64         `json:"cycles"`
	CPU    time.Duration `json:"cpu_ns"`
	Err    string        `json:"err,omitempty"`
}

// runPostgres is the parent of the comparison.
func runPostgres(ctx context.Context, c pgConfig, stdout io.Writer) error {
	admin, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return fmt.Errorf("-postgres: connect: %w", err)
	}
	defer admin.Close(context.Background())
	var version string
	admin.QueryRow(ctx, `SHOW server_version`).Scan(&version)
	shape := fmt.Sprintf("one job in flight per goroutine, %v per run", c.duration)
	if c.drain > 0 {
		shape = fmt.Sprintf("draining %d enqueued beforehand", c.drain)
	}
	if c.latency {
		fmt.Fprintf(stdout, "peerbench postgres: PostgreSQL %s, %d claims behind %d finished tickets\n", version, c.samples, c.history)
		return claimLatency(ctx, c, admin, stdout)
	}
	if c.drain > 0 {
		shape += ", ticketd fetching " + c.fetch
		if c.fetch != "claim" {
			shape += fmt.Sprintf(" gathering %v", c.gather)
		}
	}
	fmt.Fprintf(stdout, "peerbench postgres: PostgreSQL %s, %d rounds per queue, %s, goroutines %v over up to %d processes, River completing by %s\n",
		version, c.rounds, shape, c.goroutines, c.procs, c.riverMode)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, g := range c.goroutines {
		procs := min(c.procs, g)
		var td, rv, ratios, tdCPU, rvCPU []float64
		for r := range c.rounds {
			order := []string{"ticketd", "river"}
			if r%2 == 1 {
				slices.Reverse(order)
			}
			got := map[string]result{}
			for _, name := range order {
				run := timedRun
				if c.drain > 0 {
					run = drainRun
				}
				res, err := run(ctx, c, admin, self, name, g, procs)
				if err != nil {
					return fmt.Errorf("%s with %d goroutines, round %d: %w", name, g, r+1, err)
				}
				got[name] = res
			}
			t, v := got["ticketd"], got["river"]
			td, rv = append(td, t.rate), append(rv, v.rate)
			tdCPU, rvCPU = append(tdCPU, float64(t.cpuPerOp)), append(rvCPU, float64(v.cpuPerOp))
			ratios = append(ratios, t.rate/v.rate)
			fmt.Fprintf(stdout, "  goroutines=%d round %d: ticketd %7.0f cycles/s (%v client CPU/cycle)  river %7.0f cycles/s (%v client CPU/cycle)  ratio %.2f\n",
				g, r+1, t.rate, t.cpuPerOp.Round(time.Microsecond), v.rate, v.cpuPerOp.Round(time.Microsecond), t.rate/v.rate)
		}
		mt, mr := median(td), median(rv)
		fmt.Fprintf(stdout, "goroutines=%d (%d processes): ticketd median %.0f cycles/s (%.0f-%.0f), river median %.0f cycles/s (%.0f-%.0f)\n",
			g, procs, mt, slices.Min(td), slices.Max(td), mr, slices.Min(rv), slices.Max(rv))
		fmt.Fprintf(stdout, "goroutines=%d: client CPU per cycle: ticketd median %v, river median %v\n",
			g, time.Duration(median(tdCPU)).Round(time.Microsecond), time.Duration(median(rvCPU)).Round(time.Microsecond))
		fmt.Fprintf(stdout, "goroutines=%d: ticketd/river = %.2f (ratio of medians), %.2f (median of per-round ratios)\n",
			g, mt/mr, median(ratios))
	}
	return nil
}

// freshSchema creates a schema of its own for one run and returns its name.
func freshSchema(ctx context.Context, admin *pgx.Conn, prefix string) (string, error) {
	var b [5]byte
	rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	_, err := admin.Exec(ctx, "CREATE SCHEMA "+name)
	return name, err
}

func dropSchema(admin *pgx.Conn, name string) {
	admin.Exec(context.Background(), "DROP SCHEMA "+name+" CASCADE")
}

// withSearchPath is rawURL with search_path set to schema.
func withSearchPath(rawURL, schema string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// timedRun prepares a fresh schema for name, runs procs children with g goroutines among
// them for the duration, and sums what they report.
func timedRun(ctx context.Context, c pgConfig, admin *pgx.Conn, self, name string, g, procs int) (result, error) {
	schema, err := freshSchema(ctx, admin, "bench_"+name+"_")
	if err != nil {
		return result{}, err
	}
	defer dropSchema(admin, schema)
	u, err := withSearchPath(c.url, schema)
	if err != nil {
		return result{}, err
	}
	if err := prepare(ctx, name, u, schema); err != nil {
		return result{}, err
	}
	kids, err := startChildren(self, g, procs, func(n, p int) []string {
		return []string{"-child", name, "-child-url", u, "-child-schema", schema,
			"-child-goroutines", fmt.Sprint(n), "-child-queue", fmt.Sprint("q", p), "-duration", c.duration.String(),
			"-child-river-mode", c.riverMode}
	})
	defer kids.kill()
	if err != nil {
		return result{}, err
	}
	kids.send("go\n") // start them together
	reps, err := kids.reports()
	if err != nil {
		return result{}, err
	}
	var cycles int64
	var cpu time.Duration
	for _, rep := range reps {
		cycles += rep.Cycles
		cpu += rep.CPU
	}
	return result{rate: float64(cycles) / c.duration.Seconds(), cpuPerOp: cpu / time.Duration(max(cycles, 1))}, nil
}

// child is one child process of a timed run, with its stdin and stdout.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// children are the processes of one timed run.
type children []child

// startChildren starts procs children of self with g goroutines spread among them, args
// giving child p's flags for its n goroutines, and waits until each says ready. The
// caller kills them (kill) whatever the error, since some may have started.
func startChildren(self string, g, procs int, args func(n, p int) []string) (children, error) {
	var kids children
	for p := range procs {
		n := g / procs
		if p < g%procs {
			n++
		}
		cmd := exec.Command(self, args(n, p)...)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return kids, err
		}
		outPipe, err := cmd.StdoutPipe()
		if err != nil {
			return kids, err
		}
		if err := cmd.Start(); err != nil {
			return kids, err
		}
		k := child{cmd, in, bufio.NewReader(outPipe)}
		kids = append(kids, k)
		if line, err := k.out.ReadString('\n'); err != nil || line != "ready\n" {
			return kids, fmt.Errorf("child %d not ready: %q %v", p, line, err)
		}
	}
	return kids, nil
}

// send writes line to every child.
func (kids children) send(line string) {
	for _, k := range kids {
		io.WriteString(k.in, line)
	}
}

// reports reads each child's report in turn.
func (kids children) reports() ([]childReport, error) {
	var out []childReport
	for p, k := range kids {
		rep, err := k.report(p)
		if err != nil {
			return nil, err
		}
		out = append(out, rep)
	}
	return out, nil
}

// report reads child p's one-line JSON report; the child's own error fails the run.
func (k child) report(p int) (childReport, error) {
	line, err := k.out.ReadString('\n')
	if err != nil {
		return childReport{}, fmt.Errorf("child %d: %w", p, err)
	}
	var rep childReport
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		return childReport{}, fmt.Errorf("child %d: %q: %w", p, line, err)
	}
	if rep.Err != "" {
		return childReport{}, fmt.Errorf("child %d: %s", p, rep.Err)
	}
	return rep, nil
}

// kill ends the children and reaps them.
func (kids children) kill() {
	for _, k := range kids {
		k.cmd.Process.Kill()
		k.cmd.Wait()
	}
}

// prepare migrates the fresh schema for the queue about to run in it.
func prepare(ctx context.Context, name, u, schema string) error {
	switch name {
	case "ticketd":
		s, err := store.OpenURL(ctx, u, store.Options{})
		if err != nil {
			return err
		}
		return s.Close()
	case "river":
		pool, err := pgxpool.New(ctx, u)
		if err != nil {
			return err
		}
		defer pool.Close()
		m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
		if err != nil {
			return err
		}
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		return err
	}
	return fmt.Errorf("unknown queue %q", name)
}

// childFlags are the hidden flags of a child process.
type childFlags struct {
	queue, url, schema, riverQueue string
	goroutines                     int
	drain                          bool
	riverMode                      string
	fetch                          string
	gather                         time.Duration
}

func addChildFlags(fs *flag.FlagSet, cf *childFlags) {
	fs.StringVar(&cf.queue, "child", "", "(internal) run as a child process timing this queue")
	fs.StringVar(&cf.url, "child-url", "", "(internal)")
	fs.StringVar(&cf.schema, "child-schema", "", "(internal)")
	fs.StringVar(&cf.riverQueue, "child-queue", "", "(internal)")
	fs.IntVar(&cf.goroutines, "child-goroutines", 1, "(internal)")
	fs.BoolVar(&cf.drain, "child-drain", false, "(internal)")
	fs.StringVar(&cf.riverMode, "child-river-mode", "batch", "(internal)")
	fs.StringVar(&cf.fetch, "child-ticketd-fetch", "ride", "(internal)")
	fs.DurationVar(&cf.gather, "child-ticketd-gather", 0, "(internal)")
}

// runChild sets up its queue, says ready, waits for go, runs for d and reports.
func runChild(ctx context.Context, cf childFlags, d time.Duration, stdin io.Reader, stdout io.Writer) error {
	if cf.drain {
		return runDrainChild(ctx, cf, stdin, stdout)
	}
	report := func(rep childReport) error {
		b, _ := json.Marshal(rep)
		_, err := fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	var cycle func(w, i int) error
	var stop func()
	var err error
	switch cf.queue {
	case "ticketd":
		cycle, stop, err = ticketdCycle(ctx, cf)
	case "river":
		cycle, stop, err = riverCycle(ctx, cf)
	default:
		return fmt.Errorf("-child %q: want ticketd or river", cf.queue)
	}
	if err != nil {
		return report(childReport{Err: err.Error()})
	}
	defer stop()
	fmt.Fprintln(stdout, "ready")
	if line, err := bufio.NewReader(stdin).ReadString('\n'); err != nil || line != "go\n" {
		return fmt.Errorf("child: want go on stdin, got %q %v", line, err)
	}
	res, n, err := timedCount(cf.goroutines, d, cycle)
	rep := childReport{Cycles: n, CPU: res}
	if err != nil {
		rep.Err = err.Error()
	}
	return report(rep)
}

// ticketdCycle is one ticketd cycle on the store at cf.url: enqueue, claim, complete.
func ticketdCycle(ctx context.Context, cf childFlags) (func(w, i int) error, func(), error) {
	s, err := store.OpenURL(ctx, cf.url, store.Options{})
	if err != nil {
		return nil, nil, err
	}
	pid := os.Getpid()
	cycle := func(w, i int) error {
		if _, _, err := s.Enqueue(ctx, store.NewTicket{Source: "bench", ExternalID: fmt.Sprint(pid, "-", w, "-", i)}); err != nil {
			return err
		}
		// A claim that finds every ready row locked by other claims in flight has nothing
		// to take (SKIP LOCKED) and goes again, as an idle worker would.
		for {
			l, err := s.Claim(ctx, fmt.Sprint("w", w), time.Minute)
			if errors.Is(err, store.ErrNoTicket) {
				continue
			}
			if err != nil {
				return err
			}
			return s.Complete(ctx, l.Ticket.ID, l.Token, store.Result{})
		}
	}
	return cycle, func() { s.Close() }, nil
}

// riverCycle is one River cycle: insert a job and wait for a completion event.
func riverCycle(ctx context.Context, cf childFlags) (func(w, i int) error, func(), error) {
	client, events, closeFn, err := riverClient(ctx, cf)
	if err != nil {
		return nil, nil, err
	}
	cycle := func(w, i int) error {
		if _, err := client.Insert(ctx, benchArgs{}, &river.InsertOpts{Queue: cf.riverQueue}); err != nil {
			return err
		}
		select {
		case ev := <-events:
			if ev == nil {
				return errors.New("river: subscription closed")
			}
			return nil
		case err := <-txDone:
			return err
		case <-time.After(time.Minute):
			return errors.New("river: no job completed within a minute of an insert")
		}
	}
	return cycle, closeFn, nil
}

// timedCount runs cycle from g goroutines for d; it returns the process's CPU time and
// the cycles completed.
func timedCount(g int, d time.Duration, cycle func(worker, i int) error) (time.Duration, int64, error) {
	var (
		n     atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	cpu0 := cpuTime()
	for w := range g {
		wg.Go(func() {
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
		})
	}
	time.Sleep(d)
	stop.Store(true)
	count := n.Load() // cycles that ended within d
	wg.Wait()
	return cpuTime() - cpu0, count, first
}

// pollEvery is River's FetchPollInterval here: River's minimum, its lowest latency.
var pollEvery = river.FetchPollIntervalMin

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// benchArgs is River's job: a no-op.
type benchArgs struct{}

func (benchArgs) Kind() string { return "bench" }

type benchWorker struct {
	river.WorkerDefaults[benchArgs]
	// pool, when set, makes the worker complete its job in a transaction of its own
	// (river.JobCompleteTx), durable when Work returns, as ticketd's Complete is; then it
	// says so on txDone. Without it River's completer records the completion, in batches.
	pool   *pgxpool.Pool
	signal bool // send each outcome on txDone (the cycles wait on it)
}

// txDone carries the outcome of each job a transactional worker completed.
var txDone = make(chan error, 1024)

func (w benchWorker) Work(ctx context.Context, job *river.Job[benchArgs]) error {
	if w.pool == nil {
		return nil
	}
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if w.signal {
		txDone <- err
	}
	return err
}

// riverClient starts a River client working its own queue with one worker per goroutine,
// tuned for latency as far as River allows (1 ms fetch cooldown; inserts notify the
// producer, the poll is a back-stop), and subscribes to completions.
func riverClient(ctx context.Context, cf childFlags) (*river.Client[pgx.Tx], <-chan *river.Event, func(), error) {
	pool, err := pgxpool.New(ctx, cf.url)
	if err != nil {
		return nil, nil, nil, err
	}
	workers := river.NewWorkers()
	w := benchWorker{}
	var events <-chan *river.Event
	if cf.riverMode == "tx" {
		w.pool, w.signal = pool, true
	}
	river.AddWorker(workers, w)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            cf.schema,
		Queues:            map[string]river.QueueConfig{cf.riverQueue: {MaxWorkers: max(cf.goroutines, 1)}},
		Workers:           workers,
		FetchCooldown:     river.FetchCooldownMin,
		FetchPollInterval: pollEvery,
		Logger:            discardLogger(),
	})
	if err != nil {
		pool.Close()
		return nil, nil, nil, err
	}
	cancel := func() {}
	if cf.riverMode != "tx" {
		events, cancel = client.Subscribe(river.EventKindJobCompleted)
	}
	if err := client.Start(ctx); err != nil {
		pool.Close()
		return nil, nil, nil, err
	}
	return client, events, func() {
		cancel()
		stopCtx, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		client.Stop(stopCtx)
		pool.Close()
	}, nil
}

// claimLatency builds a history of c.history finished tickets (River: completed jobs)
// through each queue's own API, then times c.samples claims of a lone ready one.
func claimLatency(ctx context.Context, c pgConfig, admin *pgx.Conn, stdout io.Writer) error {
	schema, err := freshSchema(ctx, admin, "lat_ticketd_")
	if err != nil {
		return err
	}
	defer dropSchema(admin, schema)
	u, _ := withSearchPath(c.url, schema)
	s, err := store.OpenURL(ctx, u, store.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := ticketdHistory(ctx, s, c.history, stdout); err != nil {
		return err
	}
	admin.Exec(ctx, "ANALYZE "+schema+".tickets")

	rschema, err := freshSchema(ctx, admin, "lat_river_")
	if err != nil {
		return err
	}
	defer dropSchema(admin, rschema)
	ru, _ := withSearchPath(c.url, rschema)
	if err := prepare(ctx, "river", ru, rschema); err != nil {
		return err
	}
	if err := riverHistory(ctx, admin, ru, rschema, c.history, stdout); err != nil {
		return err
	}
	admin.Exec(ctx, "ANALYZE "+rschema+".river_job")
	return sampleClaims(ctx, c, s, ru, rschema, stdout)
}

// ticketdHistory gives s n finished tickets: the store's own rows, worked through the API
// on a SQLite store (a cycle there is a fraction of PostgreSQL's durable commits), then
// moved with CopyTo, ticketctl migrate's copy.
func ticketdHistory(ctx context.Context, s *store.Store, n int, stdout io.Writer) error {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "peerbench-history-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	lite, err := store.Open(ctx, tmp+"/history.db", store.Options{})
	if err != nil {
		return err
	}
	defer lite.Close()
	built, err := workHistory(ctx, lite, n)
	if err != nil {
		return fmt.Errorf("ticketd history: %w", err)
	}
	if _, err := lite.CopyTo(ctx, s); err != nil {
		return fmt.Errorf("ticketd history: %w", err)
	}
	fmt.Fprintf(stdout, "ticketd: %d finished tickets built through the API (and copied in) in %v\n", built, time.Since(start).Round(time.Second))
	return nil
}

// workHistory enqueues, claims and completes n tickets on lite from 3 goroutines, and
// returns how many it finished.
func workHistory(ctx context.Context, lite *store.Store, n int) (int64, error) {
	var built atomic.Int64
	var wg sync.WaitGroup
	var buildErr error
	var errMu sync.Mutex
	for w := range 3 {
		wg.Go(func() {
			for i := w; i < n; i += 3 {
				err := func() error {
					if _, _, err := lite.Enqueue(ctx, store.NewTicket{Source: "history", ExternalID: fmt.Sprint(i)}); err != nil {
						return err
					}
					l, err := lite.Claim(ctx, fmt.Sprint("w", w), time.Minute)
					if err != nil {
						return err
					}
					return lite.Complete(ctx, l.Ticket.ID, l.Token, store.Result{})
				}()
				if err != nil {
					errMu.Lock()
					buildErr = cmpErr(buildErr, err)
					errMu.Unlock()
					return
				}
				built.Add(1)
			}
		})
	}
	wg.Wait()
	return built.Load(), buildErr
}

// riverHistory gives River's schema n completed jobs, inserted and worked through its API.
func riverHistory(ctx context.Context, admin *pgx.Conn, ru, rschema string, n int, stdout io.Writer) error {
	client, _, stop, err := riverClient(ctx, childFlags{url: ru, schema: rschema, riverQueue: "history", goroutines: 100})
	if err != nil {
		return err
	}
	start := time.Now()
	err = insertJobs(ctx, client, "history", n)
	if err == nil {
		err = waitCompleted(ctx, admin, rschema, n)
	}
	stop()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "river: %d completed jobs built through the API in %v\n", n, time.Since(start).Round(time.Second))
	return nil
}

// insertJobs inserts n jobs on queue in batches of 1,000.
func insertJobs(ctx context.Context, client *river.Client[pgx.Tx], queue string, n int) error {
	const batch = 1000
	for i := 0; i < n; i += batch {
		params := make([]river.InsertManyParams, min(batch, n-i))
		for j := range params {
			params[j] = river.InsertManyParams{Args: benchArgs{}, InsertOpts: &river.InsertOpts{Queue: queue}}
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return err
		}
	}
	return nil
}

// waitCompleted waits until River's schema counts n completed jobs. Completions are
// counted in the database: the subscription drops events it cannot deliver at once, and
// River completes up to 5,000 in one go.
func waitCompleted(ctx context.Context, admin *pgx.Conn, rschema string, n int) error {
	for last, lastAt := -1, time.Now(); ; time.Sleep(20 * time.Millisecond) {
		var done int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+rschema+".river_job WHERE state = 'completed'").Scan(&done); err != nil {
			return err
		}
		if done >= n {
			return nil
		}
		if done != last {
			last, lastAt = done, time.Now()
		} else if time.Since(lastAt) > time.Minute {
			return fmt.Errorf("river history: %d of %d jobs completed, then none for a minute", done, n)
		}
	}
}

// sampleClaims times c.samples claims of a lone ready ticket on s and as many fetches of a
// lone available River job, and prints their medians and p90s. The samples alternate, a
// ticketd claim then a River fetch and the other way round, so both meet the same disk: a
// claim's time is mostly its commit's WAL flush, which other work on the machine makes
// jittery.
func sampleClaims(ctx context.Context, c pgConfig, s *store.Store, ru, rschema string, stdout io.Writer) error {
	pool, err := pgxpool.New(ctx, ru)
	if err != nil {
		return err
	}
	defer pool.Close()
	drv := riverpgxv5.New(pool)
	insertOnly, err := river.NewClient(drv, &river.Config{Schema: rschema, Logger: discardLogger()}) // inserts, works nothing
	if err != nil {
		return err
	}
	exec := drv.GetExecutor()
	var td, rv []time.Duration
	// The process's CPU during each timed call (its own goroutine and whatever ran beside it,
	// the listener and the collector included): the client's share of a claim, which the
	// server's statistics do not show.
	var tdCPU, rvCPU time.Duration
	ticketd := func(i int) error {
		if _, _, err := s.Enqueue(ctx, store.NewTicket{Source: "sample", ExternalID: fmt.Sprint(i)}); err != nil {
			return err
		}
		t0, c0 := time.Now(), cpuTime()
		l, err := s.Claim(ctx, "w", time.Minute)
		td, tdCPU = append(td, time.Since(t0)), tdCPU+cpuTime()-c0
		if err != nil {
			return err
		}
		return s.Complete(ctx, l.Ticket.ID, l.Token, store.Result{})
	}
	river := func() error {
		if _, err := insertOnly.Insert(ctx, benchArgs{}, &river.InsertOpts{Queue: "sample"}); err != nil {
			return err
		}
		t0, c0 := time.Now(), cpuTime()
		jobs, err := exec.JobGetAvailable(ctx, &riverdriver.JobGetAvailableParams{ClientID: "bench", MaxAttemptedBy: 100,
			MaxToLock: 1, Queue: "sample", Schema: rschema})
		rv, rvCPU = append(rv, time.Since(t0)), rvCPU+cpuTime()-c0
		if err != nil {
			return err
		}
		if len(jobs.Jobs) != 1 {
			return fmt.Errorf("river fetch: %d jobs, want the one just inserted", len(jobs.Jobs))
		}
		return nil
	}
	// ABBA: a ticketd claim then a River fetch, then the other way round, so neither queue
	// always follows the other's writes (and whatever periodic work they set off).
	for i := range c.samples {
		first, second := func() error { return ticketd(i) }, river
		if i%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "claim of the only ready ticket behind %d finished, %d samples: ticketd median %v p90 %v; river median %v p90 %v; river/ticketd (median) %.2f\n",
		c.history, c.samples, percentileOf(td, 50).Round(time.Microsecond), percentileOf(td, 90).Round(time.Microsecond),
		percentileOf(rv, 50).Round(time.Microsecond), percentileOf(rv, 90).Round(time.Microsecond), float64(percentileOf(rv, 50))/float64(percentileOf(td, 50)))
	// Sample i of each queue went first when i is even for ticketd, odd for River.
	fmt.Fprintf(stdout, "median by position: ticketd first %v, second %v; river first %v, second %v\n",
		medianOfEvery(td, 0), medianOfEvery(td, 1), medianOfEvery(rv, 1), medianOfEvery(rv, 0))
	fmt.Fprintf(stdout, "client CPU per call (this process, user+system): ticketd claim %v, river fetch %v\n",
		(tdCPU / time.Duration(c.samples)).Round(time.Microsecond), (rvCPU / time.Duration(c.samples)).Round(time.Microsecond))
	return nil
}

// medianOfEvery is the median of ds[from], ds[from+2], ds[from+4], ...
func medianOfEvery(ds []time.Duration, from int) time.Duration {
	var every []time.Duration
	for i := from; i < len(ds); i += 2 {
		every = append(every, ds[i])
	}
	if len(every) == 0 {
		return 0
	}
	return percentileOf(every, 50).Round(time.Microsecond)
}

// percentileOf is the p-th percentile of ds (nearest rank).
func percentileOf(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, (p*len(s)+99)/100-1)]
}

// drainRun enqueues c.drain into a fresh schema, untimed, then times procs children
// working them with g goroutines among them until the database counts all done.
func drainRun(ctx context.Context, c pgConfig, admin *pgx.Conn, self, name string, g, procs int) (result, error) {
	schema, err := freshSchema(ctx, admin, "drain_"+name+"_")
	if err != nil {
		return result{}, err
	}
	defer dropSchema(admin, schema)
	u, err := withSearchPath(c.url, schema)
	if err != nil {
		return result{}, err
	}
	if err := prepare(ctx, name, u, schema); err != nil {
		return result{}, err
	}
	doneQuery, err := enqueueDrain(ctx, name, u, schema, c.drain)
	if err != nil {
		return result{}, err
	}
	kids, err := startChildren(self, g, procs, func(n, p int) []string {
		return []string{"-child", name, "-child-drain", "-child-url", u, "-child-schema", schema,
			"-child-goroutines", fmt.Sprint(n), "-child-queue", "drain", "-child-river-mode", c.riverMode, "-child-ticketd-fetch", c.fetch,
			"-child-ticketd-gather", c.gather.String()}
	})
	defer kids.kill()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	kids.send("go\n")
	elapsed, err := waitDrained(ctx, admin, doneQuery, c.drain, start)
	if err != nil {
		return result{}, err
	}
	var cpu time.Duration
	for p, k := range kids {
		io.WriteString(k.in, "stop\n")
		rep, err := k.report(p)
		if err != nil {
			return result{}, err
		}
		cpu += rep.CPU
	}
	return result{rate: float64(c.drain) / elapsed.Seconds(), cpuPerOp: cpu / time.Duration(c.drain)}, nil
}

// enqueueDrain enqueues n tickets (River: jobs) through the queue's own API, untimed, and
// returns the query that counts those done.
func enqueueDrain(ctx context.Context, name, u, schema string, n int) (string, error) {
	switch name {
	case "ticketd":
		return "SELECT count(*) FROM " + schema + ".tickets WHERE state = 'done'", enqueueTicketd(ctx, u, n)
	case "river":
		return "SELECT count(*) FROM " + schema + ".river_job WHERE state = 'completed'", enqueueRiver(ctx, u, schema, n)
	}
	return "", nil
}

// enqueueTicketd enqueues n tickets from 8 goroutines.
func enqueueTicketd(ctx context.Context, u string, n int) error {
	s, err := store.OpenURL(ctx, u, store.Options{})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				if _, _, err := s.Enqueue(ctx, store.NewTicket{Source: "drain", ExternalID: fmt.Sprint(i)}); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	s.Close()
	return first
}

// enqueueRiver inserts n jobs on queue "drain" in batches of 1,000.
func enqueueRiver(ctx context.Context, u, schema string, n int) error {
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		return err
	}
	defer pool.Close()
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema, Logger: discardLogger()})
	if err != nil {
		return err
	}
	return insertJobs(ctx, client, "drain", n)
}

// waitDrained polls doneQuery until it counts n, and returns the time since start; it
// gives up after 10 minutes.
func waitDrained(ctx context.Context, admin *pgx.Conn, doneQuery string, n int, start time.Time) (time.Duration, error) {
	for {
		var done int
		if err := admin.QueryRow(ctx, doneQuery).Scan(&done); err != nil {
			return 0, err
		}
		if done >= n {
			return time.Since(start), nil
		}
		if time.Since(start) > 10*time.Minute {
			return 0, fmt.Errorf("%d of %d done after 10 minutes", done, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runDrainChild works the queue after go until it is empty (ticketd) or until stop
// (River), then reports its CPU on stop.
func runDrainChild(ctx context.Context, cf childFlags, stdin io.Reader, stdout io.Writer) error {
	report := func(rep childReport) error {
		b, _ := json.Marshal(rep)
		_, err := fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	in := bufio.NewReader(stdin)
	wait := func(word string) error {
		if line, err := in.ReadString('\n'); err != nil || line != word+"\n" {
			return fmt.Errorf("child: want %s on stdin, got %q %v", word, line, err)
		}
		return nil
	}
	var rep childReport
	var err error
	switch cf.queue {
	case "ticketd":
		rep, err = drainTicketd(ctx, cf, stdout, wait)
	case "river":
		rep, err = drainRiver(ctx, cf, stdout, wait)
	default:
		return fmt.Errorf("-child %q: want ticketd or river", cf.queue)
	}
	if err != nil {
		return err
	}
	return report(rep)
}

// drainTicketd claims and completes tickets from cf.goroutines goroutines after go, until
// none is queued, then waits for stop. A setup failure is reported, not returned, so the
// parent reads it.
func drainTicketd(ctx context.Context, cf childFlags, stdout io.Writer, wait func(string) error) (childReport, error) {
	s, err := store.OpenURL(ctx, cf.url, store.Options{})
	if err != nil {
		return childReport{Err: err.Error()}, nil
	}
	defer s.Close()
	fmt.Fprintln(stdout, "ready")
	if err := wait("go"); err != nil {
		return childReport{}, err
	}
	cpu0 := cpuTime()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	var n atomic.Int64
	next := drainStep(ctx, s, cf, &n)
	for w := range cf.goroutines {
		wg.Go(func() {
			var held *store.Lease
			for {
				l, err := next(fmt.Sprint("w", w), held)
				held = nil
				if errors.Is(err, store.ErrNoTicket) {
					due, derr := s.NextDue(ctx)
					if derr == nil && due.Queued == 0 {
						return // drained
					}
					continue
				}
				if err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
				held = &l
			}
		})
	}
	wg.Wait()
	rep := childReport{Cycles: n.Load(), CPU: cpuTime() - cpu0}
	if first != nil {
		rep.Err = first.Error()
	}
	if err := wait("stop"); err != nil {
		return childReport{}, err
	}
	return rep, nil
}

// drainStep is how a drain's worker completes the lease it holds (nil: none) and claims
// its next ticket, in -ticketd-fetch mode; done counts the completes written.
func drainStep(ctx context.Context, s *store.Store, cf childFlags, done *atomic.Int64) func(w string, held *store.Lease) (store.Lease, error) {
	mode := cf.fetch
	claim := func(w string) (store.Lease, error) { return s.Claim(ctx, w, time.Minute) }
	var f *store.Fetcher
	if mode != "claim" {
		// The process is a node: its workers share fetches, each gathering them for up to
		// -ticketd-gather, as River's producer waits out its fetch cooldown.
		f = store.NewFetcher(s, time.Minute).Gather(cf.goroutines, cf.gather)
		claim = func(w string) (store.Lease, error) { return f.Claim(ctx, w) }
	}
	return func(w string, held *store.Lease) (store.Lease, error) {
		switch {
		case held == nil:
			return claim(w)
		case mode == "ride": // the complete rides on the next fetch
			state, l, err := f.EndAndClaim(ctx, w, store.Ending{ID: held.Ticket.ID, Token: held.Token, Kind: store.EndComplete})
			if state != "" {
				done.Add(1)
			}
			return l, err
		}
		if err := s.Complete(ctx, held.Ticket.ID, held.Token, store.Result{}); err != nil {
			return store.Lease{}, err
		}
		done.Add(1)
		return claim(w)
	}
}

// drainRiver runs a River client with cf.goroutines workers on queue "drain" from go until
// stop. A setup failure is reported, not returned, so the parent reads it.
func drainRiver(ctx context.Context, cf childFlags, stdout io.Writer, wait func(string) error) (childReport, error) {
	pool, err := pgxpool.New(ctx, cf.url)
	if err != nil {
		return childReport{Err: err.Error()}, nil
	}
	workers := river.NewWorkers()
	w := benchWorker{}
	if cf.riverMode == "tx" {
		w.pool = pool
	}
	river.AddWorker(workers, w)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema: cf.schema, Workers: workers, Logger: discardLogger(),
		Queues:        map[string]river.QueueConfig{"drain": {MaxWorkers: cf.goroutines}},
		FetchCooldown: river.FetchCooldownMin, FetchPollInterval: pollEvery,
	})
	if err != nil {
		return childReport{Err: err.Error()}, nil
	}
	fmt.Fprintln(stdout, "ready")
	if err := wait("go"); err != nil {
		return childReport{}, err
	}
	cpu0 := cpuTime()
	if err := client.Start(ctx); err != nil {
		return childReport{Err: err.Error()}, nil
	}
	if err := wait("stop"); err != nil {
		return childReport{}, err
	}
	rep := childReport{CPU: cpuTime() - cpu0}
	stopCtx, done := context.WithTimeout(context.Background(), 10*time.Second)
	client.Stop(stopCtx)
	done()
	pool.Close()
	return rep, nil
}
