package daemon

import (
	"fmt"
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
