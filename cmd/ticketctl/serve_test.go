package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServe runs `ticketctl serve` on a free port and reads the page, /metrics and /healthz
// it serves from the fixture database; cancelling the context stops it cleanly.
func TestServe(t *testing.T) {
	f := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		var out strings.Builder
		code <- run(ctx, []string{"--db", f.db, "serve", "--addr", "127.0.0.1:0"}, &out, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("read serve's note: %v", err)
	}
	go io.Copy(io.Discard, pr)
	m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("serve printed %q, want the address", line)
	}
	base := "http://" + m[1]
	client := &http.Client{Timeout: 10 * time.Second}
	for _, tt := range []struct{ path, want string }{
		{"/healthz", "ok"},
		{"/", `Running <span class="count">1</span>`},
		{"/metrics", `ticketd_tickets{state="escalated"} 1`},
	} {
		resp, err := client.Get(base + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), tt.want) {
			t.Errorf("GET %s = %d, body lacks %q:\n%.400s", tt.path, resp.StatusCode, tt.want, body)
		}
	}
	cancel()
	select {
	case c := <-code:
		if c != exitOK {
			t.Errorf("serve exited %d after cancel, want 0", c)
		}
	case <-time.After(time.Minute): // a hang, not a slow stop
		t.Fatal("serve did not stop within a minute of the cancel")
	}
}

func TestServeRefusesPublicAddress(t *testing.T) {
	f := setup(t)
	r := ctl(t, "--db", f.db, "serve", "--addr", "0.0.0.0:8377")
	if r.code != exitUsage || !strings.Contains(r.stderr, "not a loopback address") {
		t.Errorf("serve on 0.0.0.0: exit %d, stderr %q; want usage error", r.code, r.stderr)
	}
}
