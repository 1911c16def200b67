package validate

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sys/unix"
)

// TestSizeWatchPacing runs the size watch on a fake clock against made-up usage: a tree over
// the limit before the check wrote anything is stopped at once, not a poll later; a check
// that writes fast from its first moment is stopped near the limit, not a whole poll's
// writing past it; an idle check and one whose tree takes long to walk are looked at about
// once a poll after the first second.
func TestSizeWatchPacing(t *testing.T) {
	const (
		limit = 1 << 30
		poll  = time.Second
		rate  = 3 << 30 // bytes a second: a fast disk
	)
	tests := []struct {
		name      string
		usage     func(since time.Duration) int64
		cost      time.Duration // how long one look takes
		run       time.Duration // how long the check runs when the watch does not stop it
		wantStop  bool
		maxAt     time.Duration // the latest the watch may stop it
		maxOver   int64         // the most the usage may be past the limit when stopped
		maxLooks  int           // 0: unchecked
		wantLooks int           // at least
	}{
		{name: "over the limit at the start", usage: func(time.Duration) int64 { return limit + 1 },
			run: 10 * time.Second, wantStop: true, maxAt: 0, maxOver: 1},
		{name: "a fast writer from the start", usage: func(d time.Duration) int64 { return int64(d.Seconds() * rate) },
			run: 10 * time.Second, wantStop: true, maxAt: poll, maxOver: rate / 10},
		{name: "a fast writer after an idle while", usage: func(d time.Duration) int64 {
			return int64(max(0, (d-5*time.Second).Seconds()) * rate)
		}, run: 20 * time.Second, wantStop: true, maxAt: 7 * time.Second, maxOver: rate},
		{name: "idle", usage: func(time.Duration) int64 { return 10 << 20 }, run: 10 * time.Second,
			maxLooks: 10 + 6, wantLooks: 10},
		{name: "idle, a look takes 300ms", usage: func(time.Duration) int64 { return 10 << 20 }, cost: 300 * time.Millisecond,
			run: 10 * time.Second, maxLooks: 10, wantLooks: 7},
		{name: "slow steady growth", usage: func(d time.Duration) int64 { return int64(d.Seconds() * (1 << 20)) },
			run: 10 * time.Second, maxLooks: 10 + 6, wantLooks: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var mu sync.Mutex
				var looks int
				var seen int64
				measure := func(ctx context.Context, budget int64) (int64, string) {
					time.Sleep(tt.cost)
					mu.Lock()
					defer mu.Unlock()
					looks++
					seen = tt.usage(time.Since(start))
					return seen, ""
				}
				ctx, cancel := context.WithTimeout(context.Background(), tt.run)
				defer cancel()
				why := watchEvery(ctx, poll, limit, measure)
				at := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				t.Logf("stopped=%v at %s after %d looks, usage %d MiB (limit %d MiB)", why != "", at, looks, seen>>20, limit>>20)
				switch {
				case tt.wantStop && why == "":
					t.Fatalf("the watch did not stop the check within %s", tt.run)
				case !tt.wantStop && why != "":
					t.Fatalf("the watch stopped an innocent check: %s", why)
				}
				if tt.wantStop && (at > tt.maxAt || seen-limit > tt.maxOver) {
					t.Errorf("stopped at %s with %d MiB past the limit; want by %s and at most %d MiB past it", at, (seen-limit)>>20, tt.maxAt, tt.maxOver>>20)
				}
				if tt.maxLooks > 0 && looks > tt.maxLooks {
					t.Errorf("%d looks in %s, want at most %d: the watch costs an idle check more than it did", looks, tt.run, tt.maxLooks)
				}
				if looks < tt.wantLooks {
					t.Errorf("%d looks in %s, want at least %d", looks, tt.run, tt.wantLooks)
				}
			})
		})
	}
}

// TestPrivateTmpfsUsed: only a tmpfs other than the host's own counts as the sandbox's private
// /tmp or /dev/shm. A process still building its sandbox once showed the host's disk where
// its /tmp was looked up, and the check was stopped for everything that disk held.
func TestPrivateTmpfsUsed(t *testing.T) {
	tmpfs := unix.Statfs_t{Type: tmpfsMagic, Bsize: 4096, Blocks: 1000, Bfree: 900, Files: 100, Ffree: 90}
	disk := tmpfs
	disk.Type = 0xef53 // ext4
	manyFiles := tmpfs
	manyFiles.Ffree = 0
	tests := []struct {
		name     string
		dev      uint64
		sfs      unix.Statfs_t
		want     int64
		countsAs bool
	}{
		{"private tmpfs", 7, tmpfs, 100 * 4096, true},
		{"private tmpfs, inodes count more", 7, manyFiles, 100 * minEntryBytes, true},
		{"the host's own", 5, tmpfs, 0, false},
		{"a disk, not the host's mount", 7, disk, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tmpfsUsed(tt.dev, 5, tt.sfs)
			if got != tt.want || ok != tt.countsAs {
				t.Errorf("tmpfsUsed = %d, %v; want %d, %v", got, ok, tt.want, tt.countsAs)
			}
		})
	}

	// The same through real descriptors: the root file system (a disk here) is not counted
	// even when it is not the host's mount at that path.
	var root unix.Statfs_t
	if err := unix.Statfs("/", &root); err != nil {
		t.Fatal(err)
	}
	if root.Type == tmpfsMagic {
		t.Skip("/ is a tmpfs on this machine: no disk to tell apart")
	}
	if used, ok := privateTmpfsUsed("/", 0); ok {
		t.Errorf("the root file system counted as a private tmpfs (%d bytes)", used)
	}
	const shm = "/dev/shm"
	if err := unix.Statfs(shm, &root); err == nil && root.Type == tmpfsMagic {
		if _, ok := privateTmpfsUsed(shm, 0); !ok {
			t.Errorf("%s, a tmpfs not the host's mount there, not counted", shm)
		}
		var st unix.Stat_t
		if err := unix.Stat(shm, &st); err != nil {
			t.Fatal(err)
		}
		if _, ok := privateTmpfsUsed(shm, uint64(st.Dev)); ok {
			t.Errorf("%s counted although it is the host's own", shm)
		}
	}
}
