package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/ticketd/ticketd/pipeline/model"
)

// systemic tells a failure of the endpoint that every ticket would meet (a refused
// parameter, a context too small for the opening prompt) from a
// ticket's own trouble, by comparing the endpoint-side faults that end attempts in a row:
//
//   - the first attempt that ends on such a fault is released unspent, and its fault kept;
//   - the next attempt of a different ticket that ends on the same fault trips it: claims
//     stop with ErrSystemic, and it and every later attempt ending the same way are
//     released unspent;
//   - an attempt that ends otherwise (fixed, or failed on its own) resets it;
//   - a ticket that meets the same fault again tonight, with no other ticket meeting it in
//     between, is charged as usual: the fault is then its own; unless no request causes
//     it (model.Fault.AnyRequest: a 401, a 404, an HTML page), when the second time in a
//     row trips it as well, so a lone ticket is never charged for the endpoint, and a
//     one-off glitch stops nothing.
//
// Safe for concurrent use.
type systemic struct {
	mu      sync.Mutex
	sig     string // the last attempt's fault, "" after a reset
	ticket  int64  // whose attempt it was
	tripped string // the fault that stopped the night, "" until then
	cause   error  // why, once tripped
	seen    map[int64]string
}

// suspect is the ticket whose attempt the last such fault ended, while it waits for another
// ticket's attempt to tell whose the fault is (0: none). Claims pass over it meanwhile
// (store.PassOver), so the next attempt is another ticket's when there is one.
func (s *systemic) suspect() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sig == "" || s.tripped != "" {
		return 0
	}
	return s.ticket
}

func (s *systemic) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sig, s.ticket = "", 0
}

// release records that ticket's attempt ended on f, and says whether to release it unspent;
// the second ticket in a row stops the night's claims (stopClaims; nil: none to stop).
func (s *systemic) release(log *slog.Logger, ticket int64, f *model.Fault, stopClaims context.CancelCauseFunc) bool {
	sig := f.Signature()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[int64]string{}
	}
	switch {
	case s.tripped == sig:
		return true
	case f.AnyRequest && s.sig == sig && s.ticket == ticket:
		// No ticket's content earns a 401, a 404 or an HTML page: met twice in a row, by a
		// lone ticket as well, it is the endpoint's, never charged (a second ticket, if any,
		// comes first: claims pass over the suspect).
		s.tripped = sig
		s.stop(log, fmt.Errorf("%w: ticket %d ended twice in a row on %s (HTTP %d), which no ticket's request causes; no further ticket is claimed tonight and it is not charged: %s",
			ErrSystemic, ticket, f.Class, f.Status, f.Error()), f, ticket)
		s.stopClaims(stopClaims)
		return true
	case s.sig == sig && s.ticket != ticket:
		s.tripped = sig
		s.stop(log, fmt.Errorf("%w: tickets %d and %d both ended on %s; no further ticket is claimed tonight and neither is charged: %s",
			ErrSystemic, s.ticket, ticket, f.Class, f.Error()), f, s.ticket, ticket)
		s.stopClaims(stopClaims)
		return true
	case s.seen[ticket] == sig && !f.AnyRequest:
		s.sig, s.ticket = sig, ticket
		return false // the same ticket again, nobody else: its own trouble
	}
	s.sig, s.ticket = sig, ticket
	s.seen[ticket] = sig
	return true
}

// stop logs the trip and keeps its cause for stopClaims; s.mu is held.
func (s *systemic) stop(log *slog.Logger, cause error, f *model.Fault, tickets ...int64) {
	s.cause = cause
	log.Error("systemic failure: every attempt fails the same way on the endpoint's side; stopping claims",
		"endpoint", f.Endpoint, "error_class", f.Class, "status", f.Status, "server_said", f.Said, "tickets", tickets)
}

// stopClaims stops the night's claims with the trip's cause (nil stopClaims: none to stop).
func (s *systemic) stopClaims(stopClaims context.CancelCauseFunc) {
	if stopClaims != nil {
		stopClaims(s.cause)
	}
}
