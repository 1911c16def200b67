package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ticketd/ticketd/store"
)

// onceNight is how one `ticketd once` of a world-fault test ended, as an operator sees it:
// the exit code, the log's ERROR lines, and the night's record (what ticketctl nights and
// /metrics read).
type onceNight struct {
	code   int
	errors []string
	run    store.Run
}

// runOnce runs `ticketd once` to its end (bounded: a hang fails the test) and reads what an
// operator sees of it.
func (c chaosNight) runOnce(t *testing.T, bin string) onceNight {
	t.Helper()
	logPath := filepath.Join(c.dir, "daemon.log")
	before, _ := os.ReadFile(logPath)
	cmd, done := c.startOnce(t, bin)
	var err error
	select {
	case err = <-done:
	case <-time.After(4 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("ticketd once did not end within 4 minutes\n%s", c.log(40))
	}
	var n onceNight
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		n.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	after, _ := os.ReadFile(logPath)
	for _, line := range strings.Split(string(after[len(before):]), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			n.errors = append(n.errors, line)
		}
	}
	c.look(t, func(s *store.Store) {
		if runs, err := s.Runs(t.Context(), 0); err == nil && len(runs) > 0 {
			n.run = runs[0]
		}
	})
	return n
}

// loggedError says whether one of the night's ERROR lines holds every word of words.
func (n onceNight) loggedError(words ...string) bool {
	for _, line := range n.errors {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// TestRemoteGoneMidNight: the push remote disappears while the night works (its folder is
// moved away once an attempt runs). The fixes are done and charged one attempt each; the
// operator is told (ERROR in the log, exit 3, the night partial naming the remote); the
// next night, with the remote back, pushes each fix once.
func TestRemoteGoneMidNight(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary and runs two nights")
	}
	bin := buildTicketd(t)
	c := newChaosNight(t, "sqlite", 2)
	c.fileMore(t, 2)
	away := c.remote + ".away"
	cmd, done := c.startOnce(t, bin)
	if _, ended, err := c.strikeAt(t, killMidAttempt, cmd.Process.Pid, rand.New(rand.NewPCG(1, 1)), done); ended {
		t.Fatalf("ticketd once ended (%v) before an attempt ran\n%s", err, c.log(30))
	}
	if err := os.Rename(c.remote, away); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := <-done; !errors.As(err, &exit) || exit.ExitCode() != exitIncomplete {
		t.Errorf("ticketd once exited %v with the remote gone; want %d\n%s", err, exitIncomplete, c.log(30))
	}
	n := onceNight{}
	c.look(t, func(s *store.Store) { runs, _ := s.Runs(t.Context(), 0); n.run = runs[0] })
	data, _ := os.ReadFile(filepath.Join(c.dir, "daemon.log"))
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			n.errors = append(n.errors, line)
		}
	}
	if !n.loggedError("push", "pub") {
		t.Errorf("no ERROR line names the failed push to pub; errors: %v", n.errors)
	}
	if n.run.Outcome != store.OutcomePartial || !strings.Contains(n.run.Error, "not pushed") || !strings.Contains(n.run.Error, "pub") {
		t.Errorf("night %s (%s); want partial naming the pushes pub did not take", n.run.Outcome, n.run.Error)
	}
	for _, s := range c.summaries(t) {
		if s.State != store.StateDone || s.Attempts != 1 {
			t.Errorf("ticket %d: %s with %d attempts (%s); want done with one", s.ID, s.State, s.Attempts, s.Reason)
		}
	}

	// The remote is back: the next night pushes what it lacks, once each.
	if err := os.Rename(away, c.remote); err != nil {
		t.Fatal(err)
	}
	next := c.runOnce(t, bin)
	if next.code != exitOK || next.run.Outcome != store.OutcomeOK {
		t.Errorf("next night: exit %d, %s (%s); want 0, ok\n%s", next.code, next.run.Outcome, next.run.Error, c.log(30))
	}
	onRemote := strings.Fields(gitOut(t, c.remote, "for-each-ref", "--format=%(refname:short)", "refs/heads/ticketd/"))
	if len(onRemote) != 2 {
		t.Errorf("the remote holds %v; want both fixes", onRemote)
	}
	for _, b := range onRemote {
		if n := c.pushedTimes(t, b); n != 1 {
			t.Errorf("the remote updated %s %d times; want once", b, n)
		}
	}
}

// failingEndpoint stands in front of the scripted model (a test double): it passes the
// first pass chat requests (the night's preflight, one per role) and fails every later one,
// until heal is set: with a 500, or, when hang is set, by never answering (the client's
// time-out ends the request).
type failingEndpoint struct {
	next   http.Handler
	pass   int64
	hang   bool
	chats  atomic.Int64
	failed atomic.Int64
	heal   atomic.Bool
}

func (p *failingEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if strings.HasSuffix(r.URL.Path, "/chat/completions") && p.chats.Add(1) > p.pass && !p.heal.Load() {
		p.failed.Add(1)
		if p.hang {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"internal error: the model replica is down","type":"server_error"}}`)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.next.ServeHTTP(w, r)
}

// TestEndpointFailsAllNight: the model endpoint passes the night's preflight, then answers
// 500 to everything, or never answers (each request ends at the endpoint's time-out). No
// ticket is charged (each is released or parked, never retried or escalated); the operator
// is told (ERROR in the log, exit 3, the night not ok naming what the endpoint did); the
// next night, against a healed endpoint, fixes them with one attempt each.
func TestEndpointFailsAllNight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the ticketd binary and runs two nights")
	}
	for _, tc := range []struct {
		name  string
		hang  bool
		words string // in the night's error
	}{
		{"500", false, "500"},
		{"timeout", true, "time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a process, folder, database and model server of its own
			testEndpointFailsAllNight(t, tc.hang, tc.words)
		})
	}
}

func testEndpointFailsAllNight(t *testing.T, hang bool, words string) {
	bin := buildTicketd(t)
	c := newChaosNight(t, "sqlite", 2)
	c.fileMore(t, 2)
	cfg, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	m := baseURLRe.FindSubmatch(cfg)
	if m == nil {
		t.Fatalf("no base_url in the fixture's config:\n%s", cfg)
	}
	target, err := neturl.Parse(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	ep := &failingEndpoint{next: httputil.NewSingleHostReverseProxy(&neturl.URL{Scheme: target.Scheme, Host: target.Host}), pass: 4, hang: hang}
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	text := strings.Replace(string(cfg), fmt.Sprintf("{base_url: %q}", m[1]), fmt.Sprintf("{base_url: %q, timeout: 2s}", srv.URL+target.Path), 1)
	// Bounded for the test: few retries, a breaker that trips and probes soon.
	text += "  retry: {max_retries: 1, base_delay: 10ms, max_delay: 50ms}\n  breaker: {failures: 3, probe_base: 200ms, probe_max: 400ms}\n"
	text = strings.Replace(text, "max_attempts: 3,", "max_attempts: 3, max_transport_releases: 2, window: 20s, grace: 5s,", 1)
	if err := os.WriteFile(c.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	n := c.runOnce(t, bin)
	t.Logf("night: exit %d, %s (%s); %d chat requests, %d failed", n.code, n.run.Outcome, n.run.Error, ep.chats.Load(), ep.failed.Load())
	if ep.failed.Load() == 0 {
		t.Fatalf("the endpoint never failed a request (%d passed): the night did not run into it", ep.chats.Load())
	}
	if n.code != exitIncomplete {
		t.Errorf("exit %d with the endpoint failing all night; want %d", n.code, exitIncomplete)
	}
	if n.run.Outcome == store.OutcomeOK || !strings.Contains(n.run.Error, words) {
		t.Errorf("night %s (%s); want not ok, naming %q", n.run.Outcome, n.run.Error, words)
	}
	if len(n.errors) == 0 {
		t.Errorf("no ERROR line in the log of a night whose endpoint failed throughout")
	}
	for _, s := range c.summaries(t) {
		if s.Attempts != 0 || (s.State != store.StateQueued && s.State != store.StateParked) {
			t.Errorf("ticket %d: %s with %d attempts (%s); want queued or parked, none charged", s.ID, s.State, s.Attempts, s.Reason)
		}
	}

	ep.heal.Store(true)
	// The short window bounded the failing night; the healed one ends when its queue is
	// done, which on a loaded machine takes longer than 20 s.
	healed := strings.Replace(text, "window: 20s, grace: 5s,", "window: 30m, grace: 1m,", 1)
	if healed == text {
		t.Fatal("the night window is not in the config as the test wrote it")
	}
	if err := os.WriteFile(c.config, []byte(healed), 0o644); err != nil {
		t.Fatal(err)
	}
	next := c.runOnce(t, bin)
	if next.code != exitOK || next.run.Outcome != store.OutcomeOK {
		t.Errorf("next night: exit %d, %s (%s); want 0, ok\n%s", next.code, next.run.Outcome, next.run.Error, c.log(30))
	}
	for _, s := range c.summaries(t) {
		if s.State != store.StateDone || s.Attempts != 1 {
			t.Errorf("next night: ticket %d %s with %d attempts (%s); want done with one", s.ID, s.State, s.Attempts, s.Reason)
		}
	}
}

// TestDatabaseReadOnly: the file system holding the SQLite database is read-only when a
// night starts (remounted after I/O errors, say). The operator is told (exit code and the
// error naming the database) and nothing is claimed or charged; once it is writable again,
// the next night works the queue.
func TestDatabaseReadOnly(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary and runs nights")
	}
	bin := buildTicketd(t)
	c := newChaosNight(t, "sqlite", 2)
	disk := filepath.Join(c.dir, "db")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=16m"); err != nil {
		t.Skipf("cannot mount a tmpfs for the database (needs root or CAP_SYS_ADMIN), so a read-only database cannot be tested here: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(disk, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", disk, err)
		}
	})
	remount := func(flags uintptr) {
		t.Helper()
		if err := syscall.Mount("tmpfs", disk, "tmpfs", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV|flags, "size=16m"); err != nil {
			t.Fatalf("remount %s (flags %#x): %v", disk, flags, err)
		}
	}
	c.location = filepath.Join(disk, "ticketd.db")
	cfg, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.config, []byte(strings.Replace(string(cfg), "store: {path: ticketd.db}", "store: {path: db/ticketd.db}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	c.fileMore(t, 1)
	if n := c.runOnce(t, bin); n.code != exitOK {
		t.Fatalf("first night: exit %d, %s (%s)\n%s", n.code, n.run.Outcome, n.run.Error, c.log(30))
	}
	c.fileMore(t, 1)
	remount(syscall.MS_RDONLY)
	out, err := exec.Command(bin, "once", "--config", c.config).CombinedOutput()
	var exit *exec.ExitError
	t.Logf("ticketd once on a read-only database: %v\n%s", err, tail(out, 10))
	if !errors.As(err, &exit) || exit.ExitCode() == exitOK {
		t.Errorf("ticketd once exited %v on a read-only database; want a failure", err)
	}
	if !strings.Contains(string(out), "read-only") && !strings.Contains(string(out), "readonly") {
		t.Errorf("the output does not say the database is read-only:\n%s", out)
	}
	remount(0)
	n := c.runOnce(t, bin)
	if n.code != exitOK || n.run.Outcome != store.OutcomeOK {
		t.Errorf("night after the database is writable again: exit %d, %s (%s)\n%s", n.code, n.run.Outcome, n.run.Error, c.log(30))
	}
	for _, s := range c.summaries(t) {
		if s.State != store.StateDone || s.Attempts != 1 {
			t.Errorf("ticket %d: %s with %d attempts (%s); want done with one", s.ID, s.State, s.Attempts, s.Reason)
		}
	}
}

// ext4Shutdown is EXT4_IOC_SHUTDOWN (_IOR('X', 125, __u32)), and shutdownNoLogFlush its
// flag EXT4_GOING_FLAGS_NOLOGFLUSH: the file system fails every later operation with EIO,
// as a dying disk does, until it is mounted again.
const (
	ext4Shutdown       = 0x8004587d
	shutdownNoLogFlush = 2
)

// loopDisk mounts a fresh ext4 file system of size MB on a loop device at dir; it skips the
// test where that cannot be done (not root, no loop devices, no mkfs.ext4).
func loopDisk(t *testing.T, dir string, size int) (remount func()) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, int64(size)<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Skipf("cannot make an ext4 file system (apt-get install e2fsprogs) for a dying disk: %v\n%s", err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mount := func() {
		t.Helper()
		if out, err := exec.Command("mount", "-o", "loop", img, dir).CombinedOutput(); err != nil {
			t.Skipf("cannot loop-mount an ext4 file system (needs root and loop devices), so a dying disk cannot be tested here: %v\n%s", err, out)
		}
	}
	mount()
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return func() {
		t.Helper()
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Fatalf("umount %s: %v\n%s", dir, err, out)
		}
		// A copy of the image, on a loop device of its own: the kernel may still hold the
		// shut-down file system of the first (a sandbox's mount namespace lets it go late).
		data, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		img = filepath.Join(filepath.Dir(img), "disk-again.img")
		if err := os.WriteFile(img, data, 0o644); err != nil {
			t.Fatal(err)
		}
		mount()
	}
}

// TestDatabaseDiskDiesMidNight: the disk holding the SQLite database starts failing every
// write (EIO) while an attempt runs, and stays so. The night must not hang past its window
// and grace, must tell the operator (ERROR in the log, a failing exit code), and once the
// disk is back the next night must fix the ticket without charging it for the lost night.
func TestDatabaseDiskDiesMidNight(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary and runs nights")
	}
	bin := buildTicketd(t)
	c := newChaosNight(t, "sqlite", 1)
	disk := filepath.Join(c.dir, "db")
	remount := loopDisk(t, disk, 32)
	c.location = filepath.Join(disk, "ticketd.db")
	cfg, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "store: {path: ticketd.db}", "store: {path: db/ticketd.db}", 1)
	text = strings.Replace(text, "max_attempts: 3,", "max_attempts: 3, window: 20s, grace: 5s,", 1)
	if err := os.WriteFile(c.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c.fileMore(t, 1)
	logPath := filepath.Join(c.dir, "daemon.log")
	cmd, done := c.startOnce(t, bin)
	if _, ended, err := c.strikeAt(t, killMidAttempt, cmd.Process.Pid, rand.New(rand.NewPCG(1, 1)), done); ended {
		t.Fatalf("ticketd once ended (%v) before an attempt ran\n%s", err, c.log(30))
	}
	fd, err := syscall.Open(disk, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	flag := uint32(shutdownNoLogFlush)
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), ext4Shutdown, uintptr(unsafe.Pointer(&flag)))
	syscall.Close(fd)
	if errno != 0 {
		cmd.Process.Kill()
		<-done
		t.Skipf("cannot shut the ext4 file system down (EXT4_IOC_SHUTDOWN): %v", errno)
	}
	var exit *exec.ExitError
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("ticketd once still runs 3 minutes after its database's disk died (window 20s, grace 5s)\n%s", c.log(30))
	}
	log, _ := os.ReadFile(logPath)
	t.Logf("ticketd once after its database's disk died: %v\n%s", err, tail(log, 8))
	if !errors.As(err, &exit) || exit.ExitCode() == exitOK {
		t.Errorf("ticketd once exited %v after its database's disk died; want a failure", err)
	}
	if !strings.Contains(string(log), `"level":"ERROR","msg":"ticket database write failed`) {
		t.Errorf("no ERROR line says the database took no writes")
	}
	// The night's last words (its log line, stderr) name the outage and the record that
	// could not be written: ticketctl cannot show this night as it ended.
	for _, words := range []string{"the ticket database took no writes from", "the night's end could not be recorded"} {
		if !strings.Contains(tail(log, 2), words) {
			t.Errorf("the night's end does not say %q:\n%s", words, tail(log, 2))
		}
	}

	remount()
	n := c.runOnce(t, bin)
	if n.code != exitOK {
		t.Errorf("the night after the disk is back: exit %d, %s (%s)\n%s", n.code, n.run.Outcome, n.run.Error, c.log(4))
	}
	// The night the disk died is on record as it ended, not as a process that died.
	var runs []store.Run
	c.look(t, func(s *store.Store) { runs, _ = s.Runs(t.Context(), 0) })
	if len(runs) != 2 || runs[1].Outcome != store.OutcomePartial || !strings.Contains(runs[1].Error, "took no writes") ||
		strings.Contains(runs[1].Error, store.ErrProcessEnded.Error()) {
		t.Errorf("nights %+v; want the first partial, naming the outage, not a process that died", runs)
	}
	if left, _ := filepath.Glob(filepath.Join(c.workspace, "*.json")); len(left) > 0 {
		t.Errorf("the kept end is still in the workspace after the next start recorded it: %v", left)
	}
	for _, s := range c.summaries(t) {
		if s.State != store.StateDone || s.Attempts != 1 {
			t.Errorf("ticket %d: %s with %d attempts (%s); want done with one", s.ID, s.State, s.Attempts, s.Reason)
		}
		if s.Crashes != 0 {
			t.Errorf("ticket %d: %d crash(es) counted against it; want none: the process did not die, its database's disk did", s.ID, s.Crashes)
		}
		if out := strings.TrimSpace(gitOut(t, c.repo, "rev-list", "--count", "main.."+s.Branch)); out != "1" {
			t.Errorf("ticket %d's branch %s has %s commits over main; want one fix", s.ID, s.Branch, out)
		}
	}
}
