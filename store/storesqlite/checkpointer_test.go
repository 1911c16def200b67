package storesqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestWALStaysBoundedUnderSustainedWrites: a PASSIVE checkpoint beside a busy writer never
// catches up with it, so the WAL restarts only after the writer's own complete checkpoint;
// the WAL file must stay near storesqlite.WALCheckpointPages frames however long the writes go on.
func TestWALStaysBoundedUnderSustainedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 100 MB of WAL frames")
	}
	b := setup(t, nil, nil)
	id := b.enqueue(t, "noted")
	// Each note of 20 KiB dirties about 11 pages: 6x the auto-checkpoint in ~4,500 commits.
	note := strings.Repeat("x", 20<<10)
	commits := 6 * storesqlite.WALCheckpointPages / 11
	for range commits {
		if err := b.s.AddNote(b.ctx, id, "test", note); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(b.s.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(2*storesqlite.WALCheckpointPages) * (storesqlite.NewPageSize + 24)
	if st.Size() > limit {
		t.Errorf("WAL is %d bytes after %d commits; want at most %d (2x the auto-checkpoint): it is not restarting", st.Size(), commits, limit)
	}
	t.Logf("WAL %d bytes after %d commits; %d background passes", st.Size(), commits, b.e.CheckpointPasses())
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
