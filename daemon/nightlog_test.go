package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
)

// records are the JSON log lines written so far.
func (s *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		out = append(out, rec)
	}
	return out
}

func find(recs []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if m, _ := r["msg"].(string); strings.HasPrefix(m, msg) {
			out = append(out, r)
		}
	}
	return out
}

// timers is the night's Clock in a test: it keeps each progress timer's function for the
// test to fire; the real clock runs every other duration than every.
type timers struct {
	mu    sync.Mutex
	every time.Duration
	fns   []func()
	armed chan struct{}
}

func (tm *timers) Now() time.Time { return time.Now() }

func (tm *timers) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (tm *timers) AfterFunc(d time.Duration, f func()) func() bool {
	if d != tm.every {
		return time.AfterFunc(d, f).Stop
	}
	tm.mu.Lock()
	tm.fns = append(tm.fns, f)
	tm.mu.Unlock()
	select {
	case tm.armed <- struct{}{}:
	default:
	}
	return func() bool { return true }
}

// fire runs the latest progress timer's function, as if every had passed.
func (tm *timers) fire(t *testing.T) {
	t.Helper()
	select {
	case <-tm.armed:
	case <-time.After(time.Minute):
		t.Fatal("the night armed no progress timer")
	}
	tm.mu.Lock()
	f := tm.fns[len(tm.fns)-1]
	tm.mu.Unlock()
	f()
}

// TestNightLogs: a night says when it starts (what is ready, how many workers), reports its
// progress on the daemon's timers (no waiting: the test fires them), says when it ends with
// its outcome, counts and cost, and an escalation is a WARN. Durations are seconds and costs
// are money, never a raw float.
func TestNightLogs(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	f := newFixture(t, 3)
	f.cases[2].Behaviour = scriptedmodel.BehaviourNever
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1, Latency: 100 * time.Millisecond})
	cfg := f.config(t, url, 2)
	cfg.Night.MaxAttempts = 1
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logs := &syncBuffer{}
	tm := &timers{every: time.Hour, armed: make(chan struct{}, 8)}
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewJSONHandler(logs, nil)), Clock: tm, ProgressEvery: time.Hour}
	done := make(chan NightReport, 1)
	go func() {
		rep, _ := d.RunNight(context.Background(), "test")
		done <- rep
	}()
	waitRunning(t, st)
	tm.fire(t)
	rep := <-done

	recs := logs.records(t)
	started := find(recs, "night started")
	if len(started) != 1 || started[0]["ready"] == nil || started[0]["workers"] != float64(2) {
		t.Errorf("night started lines: %v", started)
	}
	prog := find(recs, "night progress")
	if len(prog) != 1 {
		t.Fatalf("progress lines: %v, want the one the test fired", prog)
	}
	if spent, _ := prog[0]["spent"].(string); !strings.HasPrefix(spent, "$") || prog[0]["running"] == nil || prog[0]["done"] == nil {
		t.Errorf("progress line: %v", prog[0])
	}
	ended := find(recs, "night ended")
	if len(ended) != 1 {
		t.Fatalf("night ended lines: %v", ended)
	}
	e := ended[0]
	// An escalation is the ticket's outcome, not the night's: the night ran and is ok.
	if e["level"] != "INFO" || e["outcome"] != "ok" || rep.Outcome != "ok" {
		t.Errorf("night ended: %v (outcome %s), want INFO and ok", e, rep.Outcome)
	}
	if e["done"] != float64(2) || e["escalated"] != float64(1) || e["worked"] != float64(3) {
		t.Errorf("night ended counts: %v, want 2 done, 1 escalated, 3 worked", e)
	}
	if c, _ := e["cost"].(string); !strings.HasPrefix(c, "$") || strings.Contains(c, "e-") {
		t.Errorf("night ended cost %q, want money", e["cost"])
	}
	if _, ok := e["duration_s"].(float64); !ok {
		t.Errorf("night ended has no duration_s: %v", e)
	}
	esc := find(recs, "ticket escalated")
	if len(esc) != 1 || esc[0]["level"] != "WARN" {
		t.Errorf("escalation lines: %v, want one WARN", esc)
	}
	for _, r := range recs {
		for k, v := range r {
			if k == "took" || strings.HasSuffix(k, "_ms") || strings.HasSuffix(k, "_usd") {
				t.Errorf("%s=%v: durations are logged in seconds (_s) and costs as money: %v", k, v, r)
			}
		}
		if r["level"] == "ERROR" {
			t.Errorf("an ERROR in a night whose only trouble was a ticket it could not fix: %v", r)
		}
	}
}

// TestShutdownIsNotAnError: a night stopped by the process's shutdown ends with an INFO line,
// not a warning or an error: it did what was asked.
func TestShutdownIsNotAnError(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	realNight(t)
	f := newFixture(t, 3)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1, Latency: 150 * time.Millisecond})
	cfg := f.config(t, url, 2)
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logs := &syncBuffer{}
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewJSONHandler(logs, nil))}
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.RunNight(ctx, "test")
	}()
	waitRunning(t, st)
	cancel()
	<-done
	recs := logs.records(t)
	ended := find(recs, "night ended")
	if len(ended) != 1 || ended[0]["level"] != "INFO" || ended[0]["outcome"] != "stopped" {
		t.Errorf("night ended after a shutdown: %v, want one INFO line, outcome stopped", ended)
	}
	for _, r := range recs {
		if r["level"] == "ERROR" {
			t.Errorf("an ERROR after a normal shutdown: %v", r)
		}
	}
}
