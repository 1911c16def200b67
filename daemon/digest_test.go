package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/daemon/notify"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestNightSendsTheDigest: a real night (scripted model, git, pytest) ends with one digest
// posted to notify.webhook, saying ok and the fixed ticket's figures; a webhook that answers
// 500 the next night is logged and recorded on that night, whose outcome stays its own.
func TestNightSendsTheDigest(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	f := newFixture(t, 1)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	var mu sync.Mutex
	var posts []notify.Digest
	fail := false
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			http.Error(w, "no_service", http.StatusInternalServerError)
			return
		}
		var d notify.Digest
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &d); err != nil {
			t.Errorf("digest is not JSON: %v", err)
		}
		posts = append(posts, d)
	}))
	defer hook.Close()
	cfg := f.config(t, url, 1)
	cfg.Notify.Webhook.URL = hook.URL + "/hook/s3cr3t"
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var logs strings.Builder
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))}
	rep, err := d.RunNight(context.Background(), "test")
	if err != nil || rep.Outcome != store.OutcomeOK {
		t.Fatalf("night 1: %s, %v", rep.Outcome, err)
	}
	mu.Lock()
	if len(posts) != 1 || posts[0].Night.ID != rep.RunID || posts[0].Night.Outcome != "ok" || posts[0].Night.Done != 1 || !strings.Contains(posts[0].Text, "1 done") {
		t.Errorf("posts after night 1 = %+v; want one digest of an ok night with 1 done", posts)
	}
	fail = true
	mu.Unlock()
	rep2, err := d.RunNight(context.Background(), "test")
	if err != nil || rep2.Outcome != store.OutcomeOK {
		t.Fatalf("night 2 with a failing webhook: %s, %v; want ok as the night itself went", rep2.Outcome, err)
	}
	got, err := st.Digests(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !got[rep.RunID].OK || got[rep2.RunID].OK || !strings.Contains(got[rep2.RunID].Error, "500") {
		t.Errorf("digests recorded = %+v", got)
	}
	if !strings.Contains(logs.String(), "morning digest not delivered") || strings.Contains(logs.String(), "s3cr3t") {
		t.Errorf("the log should say the digest failed, without the address:\n%s", logs.String())
	}
}

// syncWriter serialises writes to w (the night logs from several goroutines).
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
