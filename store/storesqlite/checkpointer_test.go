package storesqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/storesqlite"
)

// TestCheckpointerBackfillsOffTheWritersPath: after storesqlite.CheckpointEvery commits the background
// checkpointer copies the WAL into the database file, long before the writer's own
// auto-checkpoint (storesqlite.WALCheckpointPages) would.
func TestCheckpointerBackfillsOffTheWritersPath(t *testing.T) {
	b := setup(t, nil, nil)
	size := func() int64 {
		t.Helper()
		st, err := os.Stat(b.s.Path())
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	before := size()
	for i := range 2 * storesqlite.CheckpointEvery {
		if err := b.s.AddNote(b.ctx, b.enqueue(t, fmt.Sprint(i)), "test", "note"); err != nil {
			t.Fatal(err)
		}
	}
	// 2*storesqlite.CheckpointEvery enqueues and notes are 4x storesqlite.CheckpointEvery commits: several kicks.
	select {
	case <-b.e.CheckpointPassed():
	case <-time.After(time.Minute): // a bound on disk I/O, not a clock the test waits out
		t.Fatal("no background checkpoint pass after 4x storesqlite.CheckpointEvery commits")
	}
	frames := walFrames(t, b.s.Path())
	if frames >= storesqlite.WALCheckpointPages {
		t.Fatalf("WAL holds %d frames: the writer's auto-checkpoint (%d) may have done the copy", frames, storesqlite.WALCheckpointPages)
	}
	if after := size(); after <= before {
		t.Errorf("database file %d -> %d bytes with %d WAL frames; want the background pass to have copied pages into it", before, after, frames)
	}
}

// TestWALStaysBoundedUnderSustainedWrites: PASSIVE checkpoints beside a busy writer and
// readers that always overlap never complete, so nothing restarts the log but boundWAL's
// RESTART; the WAL file must stay near storesqlite.WALCheckpointPages frames however long
// the writes go on. Without boundWAL it reached 49-64 MB here (over 400 MB with longer
// reads).
func TestWALStaysBoundedUnderSustainedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 100 MB of WAL frames")
	}
	b := setup(t, nil, nil)
	id := b.enqueue(t, "noted")
	read := b.enqueue(t, "read")
	for i := range 50 {
		if err := b.s.AddNote(b.ctx, read, "test", fmt.Sprintf("note %d %s", i, strings.Repeat("y", 1000))); err != nil {
			t.Fatal(err)
		}
	}
	// Three readers in a loop, like status pages and ticketctl: one of them always holds a
	// snapshot older than the writer's last commit.
	ctx, stop := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := b.s.Events(ctx, read); err != nil && ctx.Err() == nil {
					t.Errorf("read events: %v", err)
					return
				}
				reads.Add(1)
			}
		})
	}
	// Each note of 20 KiB dirties about 11 pages: 6x the auto-checkpoint in ~4,500 commits.
	note := strings.Repeat("x", 20<<10)
	commits := 6 * storesqlite.WALCheckpointPages / 11
	var largest int64
	for i := range commits {
		if err := b.s.AddNote(b.ctx, id, "test", note); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			largest = max(largest, walSize(t, b.s.Path()))
		}
	}
	stop()
	wg.Wait()
	largest = max(largest, walSize(t, b.s.Path()))
	limit := int64(2*storesqlite.WALCheckpointPages) * (storesqlite.NewPageSize + 24)
	if largest > limit {
		t.Errorf("WAL reached %d bytes in %d commits beside readers; want at most %d (2x the auto-checkpoint): it is not restarting", largest, commits, limit)
	}
	t.Logf("WAL at most %d bytes over %d commits and %d reads; %d background passes, %d restarts by the writer",
		largest, commits, reads.Load(), b.e.CheckpointPasses(), b.e.WALRestarts())
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// walFrames is how many frames the WAL at path+"-wal" holds, from its size.
func walFrames(t *testing.T, path string) int {
	t.Helper()
	st, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return int((st.Size() - 32) / (storesqlite.NewPageSize + 24))
}

// TestCloseTwice: a second Close (deferred cleanups often overlap) must not panic on the
// stopped checkpointer.
func TestCloseTwice(t *testing.T) {
	s, err := storesqlite.Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), storesqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	_ = s.Close() // the result may be an error (closed connections); a panic fails the test
}

// TestCheckpointerNeverRecreatesADeletedFile: the database file is deleted while the store
// has it open, before the background checkpointer's first pass. Before, that pass opened
// its connection with the right to create, and put a new, empty database at the path: the
// night's check then saw the file replaced instead of deleted (one way
// daemon.TestDatabaseDeletedMidNight could fail under load), and the next start would find
// an empty queue. Now the pass fails, and the path stays empty.
func TestCheckpointerNeverRecreatesADeletedFile(t *testing.T) {
	b := setup(t, nil, nil)
	path := b.s.Path()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	ran := false
	for i := 0; !ran && i < 2*storesqlite.CheckpointEvery; i++ {
		if err := b.s.AddNote(b.ctx, b.enqueue(t, fmt.Sprint(i)), "test", "note"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-b.e.CheckpointRan():
			ran = true
		default:
		}
	}
	if !ran {
		select {
		case <-b.e.CheckpointRan():
		case <-time.After(time.Minute): // a bound on disk I/O, not a clock the test waits out
			t.Fatal("no background checkpoint pass after 4x storesqlite.CheckpointEvery commits")
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the deleted database's path holds a file again after a checkpoint pass (stat: %v); want it left deleted", err)
	}
	if err := b.e.CheckFile(); err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Errorf("CheckFile: %v; want the file deleted", err)
	}
}
