package daemon

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ticketd/ticketd/store"
)

// rateLimitEnding decides where a ticket goes whose attempt a rate limit stopped, the
// provider having said the limit lifts at retryAt: back to the queue, claimable at retryAt,
// when that falls inside the night's window; parked until the next night only when it does
// not. Either way the attempt is not charged and no other (pricier) model is tried.
func rateLimitEnding(retryAt, windowEnd time.Time, reason string) (f store.Failure, park bool) {
	if retryAt.Before(windowEnd) {
		return store.Failure{Kind: store.FailRateLimit, RunAfter: retryAt,
			Reason: fmt.Sprintf("waits until %s, when the provider said the limit lifts: %s", retryAt.UTC().Format(time.RFC3339), reason)}, false
	}
	return store.Failure{Kind: store.FailRateLimit, RunAfter: retryAt,
		Reason: fmt.Sprintf("the provider said the limit lifts at %s, after the night's window (%s): %s",
			retryAt.UTC().Format(time.RFC3339), windowEnd.UTC().Format(time.RFC3339), reason)}, true
}

// deferRateLimited records rateLimitEnding's decision for a leased ticket.
func (w *workerPool) deferRateLimited(ctx context.Context, log *slog.Logger, lease store.Lease, retryAt time.Time, reason string) {
	f, park := rateLimitEnding(retryAt, w.windowEnd, oneLine(reason))
	err := w.persist(w.stopCtx(), log, "defer a rate-limited ticket", lease.Ticket.ID, func(ctx context.Context) error {
		if park {
			_, err := w.d.Store.Park(ctx, lease.Ticket.ID, lease.Token, w.parkUntil,
				fmt.Sprintf("parked %s: rate limited; %s", cmp.Or(w.parkNote, "until the next night"), f.Reason))
			return err
		}
		_, err := w.d.Store.Fail(ctx, lease.Ticket.ID, lease.Token, f)
		return err
	})
	if err != nil {
		log.Error("defer a rate-limited ticket", "err", err)
		return
	}
	log.Warn("ticket rate limited: waits for the reset", "retry_at", retryAt, "parked", park)
}
