package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Dismissal is an operator's "done with it" on one item of the console's "Needs you" list.
// Item is the key the list gives the item; a key names what the item is about at the time
// (a ticket's escalation after its n-th attempt, a night), so that the same ticket needing
// a human again later is a new item, not a dismissed one.
type Dismissal struct {
	Item  string    `json:"item"`
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
	Note  string    `json:"note"`
}

// maxItemKey bounds an item's key: keys are short, made by the console, and come back in
// forms.
const maxItemKey = 200

// checkItemKey refuses a key the console could not have made.
func checkItemKey(item string) error {
	if item == "" || len(item) > maxItemKey || strings.IndexFunc(item, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0 {
		return fmt.Errorf("dismiss %q: want the item's key as the console gives it (such as ticket/12/escalated/3 or night/7), at most %d printable characters without spaces", item, maxItemKey)
	}
	return nil
}

// Dismiss records that actor dismissed item (with an optional note): the console no longer
// lists it. Dismissing it again replaces the earlier record.
func (s *Store) Dismiss(ctx context.Context, item, actor, note string) error {
	if err := checkItemKey(item); err != nil {
		return err
	}
	err := s.write(ctx, "dismiss", func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, s.q.Console.Dismiss, storedriver.DismissParams{Item: item, At: s.nowMS(),
			Actor: truncate(CleanText(actor), 200), Note: truncate(CleanText(note), 2000)}.Args()...)
		return err
	})
	if err != nil {
		return fmt.Errorf("dismiss %s: %w", item, err)
	}
	return nil
}

// Undismiss takes item back onto the list (nothing when it was not dismissed).
func (s *Store) Undismiss(ctx context.Context, item string) error {
	if err := checkItemKey(item); err != nil {
		return err
	}
	err := s.write(ctx, "undismiss", func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, s.q.Console.Undismiss, item)
		return err
	})
	if err != nil {
		return fmt.Errorf("undismiss %s: %w", item, err)
	}
	return nil
}

// Dismissals returns every dismissal, by item key.
func (s *Store) Dismissals(ctx context.Context) (map[string]Dismissal, error) {
	rows, err := s.rd.Query(ctx, s.q.Console.Dismissals)
	if err != nil {
		return nil, fmt.Errorf("dismissals: %w", err)
	}
	defer rows.Close()
	out := map[string]Dismissal{}
	for rows.Next() {
		var d Dismissal
		var at sql.NullInt64
		if err := rows.Scan(&d.Item, &at, &d.Actor, &d.Note); err != nil {
			return nil, fmt.Errorf("dismissals: %w", err)
		}
		d.At = fromMS(at)
		out[d.Item] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dismissals: %w", err)
	}
	return out, nil
}
