// Package notify sends the morning digest: at the end of each night, one JSON message to a
// configured webhook (notify.webhook) with the night's outcome, what needs a human, the pull
// requests opened and the cost. The message has a Slack-compatible "text" field beside
// structured ones, so a Slack or Mattermost incoming webhook shows it as is and a script can
// read the fields. A delivery that fails (time-out, refused, non-2xx) is logged and recorded
// on the night (store.RecordDigest: the console and ticketctl nights show it); it never
// fails or holds the night beyond the webhook's time-out. The webhook's address may hold a
// secret: it is never logged, recorded or put in an error.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
)

// AfterNight is the night's one hook: it builds night runID's digest from the store and
// posts it to the webhook, once per night (a night whose digest was delivered is not sent
// again, as when a second node ends the same night), and records how that went. Without a
// webhook it does nothing. It returns nothing: a failed digest is the operator's to see,
// never the night's failure.
func AfterNight(ctx context.Context, st *store.Store, w config.Webhook, runID int64, log *slog.Logger) {
	addr := w.Address()
	if addr == "" || runID == 0 {
		return
	}
	if sent, err := st.Digests(ctx); err == nil && sent[runID].OK {
		return
	}
	d, err := Build(ctx, st, runID)
	if err == nil {
		err = Send(ctx, addr, cmpTimeout(w.Timeout), d)
	}
	rec := store.DigestDelivery{RunID: runID, OK: err == nil}
	if err != nil {
		rec.Error = err.Error()
		log.Warn("morning digest not delivered", "run", runID, "err", rec.Error)
	} else {
		log.Info("morning digest delivered", "run", runID)
	}
	if err := st.RecordDigest(ctx, rec); err != nil {
		log.Warn("record the morning digest's delivery", "run", runID, "err", err)
	}
}

func cmpTimeout(t time.Duration) time.Duration {
	if t <= 0 {
		return config.DefaultWebhookTimeout
	}
	return t
}

// Send posts d as JSON to addr within timeout. Its error says what went wrong without the
// address: the webhook's answer (status and the start of its body), or the transport's
// failure (refused, time-out).
func Send(ctx context.Context, addr string, timeout time.Duration, d Digest) error {
	body, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("digest: encode: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, addr, bytes.NewReader(body))
	if err != nil {
		return errors.New("digest: the webhook's address is not a URL (notify.webhook)")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "ticketd-digest")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("digest: webhook unreachable: %s", withoutURL(err, timeout))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("digest: webhook answered %s", resp.Status)
		if a := strings.Join(strings.Fields(string(answer)), " "); a != "" {
			msg += ": " + clip(a, 200)
		}
		return errors.New(msg)
	}
	return nil
}

// withoutURL is the transport's error without the request's address (net/http puts it in
// every *url.Error).
func withoutURL(err error, timeout time.Duration) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Sprintf("no answer within %s (notify.webhook.timeout)", timeout)
		}
		err = ue.Err
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "the webhook's host name does not resolve: " + dns.Err
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op + ": " + op.Err.Error() // without the address
	}
	return err.Error()
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
