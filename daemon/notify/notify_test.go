package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// nightDB builds a database with one ended night: a ticket done with a pull request, one
// escalated whose title would ping a Slack channel, one asking a question.
func nightDB(t *testing.T) (*store.Store, int64) {
	t.Helper()
	ctx := context.Background()
	clk := clocktest.New(time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC))
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "t.db"), store.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	run, err := st.StartRun(ctx, "cron")
	if err != nil {
		t.Fatal(err)
	}
	work := func(title string, end func(id, token int64) error) int64 {
		clk.Advance(time.Second)
		id, _, err := st.Enqueue(ctx, store.NewTicket{Source: "dir", ExternalID: title, Repo: "shop", Title: title, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		l, err := st.Claim(ctx, "w1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := end(id, l.Token); err != nil {
			t.Fatal(err)
		}
		return id
	}
	done := work("Rounding of refunds", func(id, tok int64) error {
		if err := st.Complete(ctx, id, tok, store.Result{Branch: "ticketd/1-fix", Summary: "fixed"}); err != nil {
			return err
		}
		return st.RecordOutput(ctx, id, store.OutputPullRequest, "https://github.com/acme/shop/pull/7")
	})
	_ = done
	work("<!channel> tax is wrong", func(id, tok int64) error {
		_, err := st.Fail(ctx, id, tok, store.Failure{Kind: store.FailFix, Reason: "fix: checks failed: tests/test_tax.py::test_vat", Final: true})
		return err
	})
	work("Which currency?", func(id, tok int64) error {
		_, err := st.AskHuman(ctx, id, tok, store.Asked{Question: "EUR or the customer's?"})
		return err
	})
	clk.Advance(time.Minute)
	if err := st.EndRun(ctx, run, store.OutcomePartial, "1 ticket(s) left in the queue: the window closed"); err != nil {
		t.Fatal(err)
	}
	return st, run
}

// TestDigestDeliveredOnce: at the night's end one JSON POST reaches the webhook, with the
// outcome, what needs a human, the pull request and the cost, Slack's text field escaped;
// the delivery is recorded, and a second call for the same night (another node ending it)
// sends nothing.
func TestDigestDeliveredOnce(t *testing.T) {
	st, run := nightDB(t)
	var mu sync.Mutex
	var bodies [][]byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer hook.Close()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	w := config.Webhook{URL: hook.URL + "/services/T0/B0/s3cr3t"}
	AfterNight(context.Background(), st, w, run, log)
	AfterNight(context.Background(), st, w, run, log)
	if len(bodies) != 1 {
		t.Fatalf("the webhook got %d posts, want 1 (once per night)", len(bodies))
	}
	var d Digest
	if err := json.Unmarshal(bodies[0], &d); err != nil {
		t.Fatalf("the digest is not JSON: %v\n%s", err, bodies[0])
	}
	if d.Night.ID != run || d.Night.Outcome != "partial" || d.Night.Done != 1 || d.Night.Escalated != 1 || d.NeedsHumanTotal != 2 ||
		len(d.PullRequests) != 1 || d.PullRequests[0].URL != "https://github.com/acme/shop/pull/7" {
		t.Errorf("digest = %+v", d)
	}
	for _, want := range []string{"ticketd night 1 (cron): partial — 1 ticket(s) left in the queue", "Needs a human (2)", "&lt;!channel&gt; tax is wrong",
		"test_tax.py::test_vat", "EUR or the customer's?", "Pull requests opened (1)", "https://github.com/acme/shop/pull/7"} {
		if !strings.Contains(d.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, d.Text)
		}
	}
	if strings.Contains(d.Text, "<!channel>") {
		t.Error("an issue title reaches Slack's text unescaped")
	}
	got, _ := st.Digests(context.Background())
	if !got[run].OK {
		t.Errorf("the delivery's record = %+v", got[run])
	}
	if strings.Contains(logs.String(), "s3cr3t") {
		t.Errorf("the log shows the webhook's address:\n%s", logs.String())
	}
}

// TestDigestFailures: a webhook that answers 500, refuses the connection, never answers, or
// redirects is a failed delivery: logged, recorded on the night with why, never with the
// address (it holds a secret); AfterNight returns in about the time-out.
func TestDigestFailures(t *testing.T) {
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close()
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer silent.Close()
	defer close(release) // before Close, which waits for the handler
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "invalid_payload\n")
	}))
	defer failing.Close()
	moved := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.example/", http.StatusFound)
	}))
	defer moved.Close()
	tests := []struct {
		name, url, want string
	}{
		{"500", failing.URL, "webhook answered 500 Internal Server Error: invalid_payload"},
		{"refused", refusedURL, "webhook unreachable"},
		{"no answer", silent.URL, "no answer within 200ms"},
		{"redirect", moved.URL, "webhook answered 302 Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, run := nightDB(t)
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			AfterNight(context.Background(), st, config.Webhook{URL: tt.url + "/hooks/s3cr3t", Timeout: 200 * time.Millisecond}, run, log)
			got, err := st.Digests(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rec := got[run]; rec.OK || !strings.Contains(rec.Error, tt.want) {
				t.Errorf("recorded %+v, want a failure with %q", rec, tt.want)
			}
			if !strings.Contains(logs.String(), "morning digest not delivered") || !strings.Contains(logs.String(), tt.want) {
				t.Errorf("log:\n%s", logs.String())
			}
			if strings.Contains(logs.String()+got[run].Error, "s3cr3t") || strings.Contains(got[run].Error, "127.0.0.1") {
				t.Errorf("the address leaks: %q\n%s", got[run].Error, logs.String())
			}
			if runs, _ := st.Runs(context.Background(), 1); runs[0].Outcome != store.OutcomePartial {
				t.Errorf("the night's outcome became %q", runs[0].Outcome)
			}
		})
	}
}

// TestNoWebhookNoDigest: without notify.webhook nothing is sent or recorded.
func TestNoWebhookNoDigest(t *testing.T) {
	st, run := nightDB(t)
	AfterNight(context.Background(), st, config.Webhook{URLEnv: "TICKETD_TEST_UNSET_WEBHOOK"}, run, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if got, _ := st.Digests(context.Background()); len(got) != 0 {
		t.Errorf("digests recorded without a webhook: %+v", got)
	}
}
