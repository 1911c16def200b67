package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/store"
)

// unlinkJSON is the stable shape of unlink --json.
type unlinkJSON struct {
	ID            int64       `json:"id"`
	DuplicateOf   int64       `json:"duplicate_of"`
	PreviousState store.State `json:"previous_state"`
	State         store.State `json:"state"`
}

// cmdUnlink puts a duplicate back in the queue to be worked on its own.
func cmdUnlink(e *env, args []string) error {
	fs := e.flagSet("unlink")
	pos, err := e.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	id, err := e.parseID(pos[0])
	if err != nil {
		return err
	}
	return e.withStore(func(s *store.Store) error {
		before, err := s.Get(e.ctx, id)
		if err != nil {
			return notFoundHint(err)
		}
		link, err := s.DuplicateOf(e.ctx, id)
		if errors.Is(err, store.ErrNotDuplicate) || (err == nil && before.State != store.StateDuplicate) {
			return fmt.Errorf("%w: ticket %d is %s, not waiting as a duplicate (ticketctl list --state duplicate lists those that are)", store.ErrInvalidTransition, id, before.State)
		}
		if err != nil {
			return err
		}
		if err := s.Unlink(e.ctx, id, e.actor()); err != nil {
			return err
		}
		after, err := s.Get(e.ctx, id)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(unlinkJSON{ID: id, DuplicateOf: link.Of, PreviousState: before.State, State: after.State})
		}
		fmt.Fprintf(e.stdout, "ticket %d: %s -> %s (no longer a duplicate of #%d; it is worked on its own and never linked again)\n",
			id, before.State, after.State, link.Of)
		return nil
	})
}

// duplicateState is a duplicate's state as list shows it: "duplicate of #N".
func duplicateState(t store.Summary) string {
	if of, _, ok := strings.Cut(t.Reason, ":"); ok && strings.HasPrefix(of, "duplicate of #") {
		return of
	}
	return string(t.State)
}
