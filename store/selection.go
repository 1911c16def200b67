package store

import (
	"context"
	"fmt"

	"github.com/ticketd/ticketd/store/storedriver"
)

// NoteSelectionMissed records on ticket id that the night's whole suite refused its fix
// after the tests its change reaches had passed it (text: what failed). The state is
// unchanged; SelectionMissed counts these per repository.
func (s *Store) NoteSelectionMissed(ctx context.Context, id int64, actor, text string) error {
	text = CleanText(text)
	if len(text) > maxNote {
		text = text[:maxNote]
	}
	err := s.write(ctx, "note a missed selection", func(ctx context.Context, tx storedriver.Tx) error {
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: s.nowMS(), Kind: EventSelectionMissed, From: st, To: st, Attempt: attempts, Actor: actor, Reason: text, Reserve: true})
	})
	if err != nil {
		return fmt.Errorf("note a missed selection on ticket %d: %w", id, err)
	}
	return nil
}

// SelectionMissed counts, per repository, the fixes the night's whole suite refused after
// the selected tests had passed them: the figure that says whether test selection is safe.
func (s *Store) SelectionMissed(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.each(ctx, s.q.EventsByRepo, []any{string(EventSelectionMissed)}, func(r storedriver.Rows) error {
		var repo string
		var n int64
		if err := r.Scan(&repo, &n); err != nil {
			return err
		}
		out[repo] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count missed selections: %w", err)
	}
	return out, nil
}
