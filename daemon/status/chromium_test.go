package status

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
)

// chromium runs headless Chromium with args and returns its stdout.
func chromium(t *testing.T, args ...string) string {
	t.Helper()
	bin := testenv.ChromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,900"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// TestPageInChromium renders the status page in a real browser: the text reads right, the
// untrusted title stays text, each chart has one bar per model call, and the live part
// refreshes without a reload (a model call recorded after the page loaded shows up once
// the page's script fetched /live; virtual time makes the wait instant).
func TestPageInChromium(t *testing.T) {
	fx := setup(t)
	s, err := New(fx.store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	var once sync.Once
	added := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.URL.Path == "/" {
			once.Do(func() {
				defer close(added)
				if _, err := fx.store.RecordModelCall(context.Background(), store.ModelCall{TicketID: fx.running, Attempt: 1,
					Role: "maker", Model: "gpt-4.1", PromptTokens: 9900, CachedTokens: 9344, CompletionTokens: 300,
					CostUSD: f64(0.004), StartedAt: time.Now()}); err != nil {
					t.Errorf("record model call: %v", err)
				}
			})
		}
	}))
	defer srv.Close()

	dom := chromium(t, "--virtual-time-budget=10000", "--dump-dom", srv.URL+"/")
	<-added
	for _, want := range []string{"ticketd", "running", "Discount applied twice", "step 3 (run_checks)",
		"Truncate cuts words in half", "budget exhausted", "Tonight: night 1 (once)"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if strings.Contains(dom, "<script>alert") || !strings.Contains(dom, "&lt;script&gt;alert") {
		t.Errorf("the untrusted title is not shown as text")
	}
	tests := []struct {
		what string
		id   int64
		want int
	}{
		{"running ticket, refreshed after one more call", fx.running, fx.runningCalls + 1},
		{"done ticket", fx.done, 2},
		{"escalated ticket", fx.escalated, 1},
	}
	for _, tt := range tests {
		if got := bars(t, dom, tt.id); got != tt.want {
			t.Errorf("%s (%d): chart has %d bars in the rendered DOM, want %d", tt.what, tt.id, got, tt.want)
		}
	}

	dir := t.TempDir()
	if d := os.Getenv("TICKETD_SCREENSHOT_DIR"); d != "" {
		dir = d
	}
	png := filepath.Join(dir, "status.png")
	chromium(t, "--virtual-time-budget=2000", "--screenshot="+png, srv.URL+"/")
	data, err := os.ReadFile(png)
	if err != nil || len(data) < 8 || string(data[1:4]) != "PNG" {
		t.Fatalf("screenshot %s: %d bytes, err %v", png, len(data), err)
	}
	t.Logf("screenshot: %s (%d bytes)", png, len(data))
}
