package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// ErrProcessEnded is the error a night gets when the living close it for its dead node.
var ErrProcessEnded = errors.New("the process ended without closing the night")

// BeatRun extends this node's lease on night id to now+leaseFor. A node whose lease on its
// night expires is dead to the others (SettleDead): a node beats while its night runs.
func (s *Store) BeatRun(ctx context.Context, id int64, leaseFor time.Duration) error {
	err := s.write(ctx, "beat run", func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, s.q.BeatRunNode, s.nowMS()+leaseFor.Milliseconds(), id, s.opts.Node)
		return err
	})
	if err != nil {
		return fmt.Errorf("extend %s's lease on run %d: %w", s.opts.Node, id, err)
	}
	return nil
}

// DeadScope says which unfinished parts of nights SettleDead takes for dead.
type DeadScope int

const (
	// DeadExpired: the parts of other nodes whose lease on the night expired (any node of a
	// shared database looks at the others).
	DeadExpired DeadScope = iota
	// DeadOwn: those, and every unfinished part of this node: it is starting, so its
	// previous process is gone. The crash is blamed on a ticket that was alone in flight.
	DeadOwn
	// DeadAll: every unfinished part of every node (a SQLite file under the instance lock,
	// where no other process writes), blaming as DeadOwn.
	DeadAll
)

// DeadNight is one node's part of a night that SettleDead closed.
type DeadNight struct {
	RunID int64  `json:"run_id"`
	Node  string `json:"node"`
	// InFlight are the tickets whose attempts the dead process was running (blaming scopes
	// only, for the node's latest night).
	InFlight []int64 `json:"in_flight,omitempty"`
	// Blamed is the ticket the crash counted against (the only one in flight), 0 for none;
	// Escalated says that crash brought it to the store's MaxRescues.
	Blamed    int64 `json:"blamed,omitempty"`
	Escalated bool  `json:"escalated,omitempty"`
}

// openPart is an unfinished node's part of a night.
type openPart struct {
	run            int64
	node           string
	started, lease int64
}

// SettleDead closes the parts of nights whose process died (see DeadScope): each is marked
// died and the night's outcome becomes failed with ErrProcessEnded (merged as EndRun merges,
// naming the node when the night had several), its totals computed from what its events and
// model calls recorded. In the blaming scopes, the node's latest dead part also decides
// whose the crash was: a ticket whose attempt was the only one in flight gets a crash
// (Ticket.Crashes), and the one that reaches MaxRescues is escalated; with several in
// flight the crash was the process's, and no ticket is charged for it. The dead process's
// leases end at once; Claim rescues their tickets as it rescues any lost lease, never
// charging the attempt.
func (s *Store) SettleDead(ctx context.Context, scope DeadScope) ([]DeadNight, error) {
	var out []DeadNight
	err := s.write(ctx, "settle dead nights", func(ctx context.Context, tx storedriver.Tx) error {
		out = nil
		now := s.nowMS()
		parts, err := s.openParts(ctx, tx)
		if err != nil {
			return err
		}
		latest := map[string]int{} // node -> index in out of its latest dead part
		for _, p := range parts {
			own := p.node == s.opts.Node
			dead := scope == DeadAll || (scope == DeadOwn && own) || (!own && p.lease > 0 && p.lease <= now)
			if !dead {
				continue
			}
			ended := now
			if p.lease > 0 && p.lease < now {
				ended = p.lease
			}
			if err := s.closeDeadPart(ctx, tx, p, ended); err != nil {
				return err
			}
			key := p.node
			if scope == DeadAll {
				key = ""
			}
			if i, ok := latest[key]; !ok || out[i].RunID < p.run {
				latest[key] = len(out)
			}
			out = append(out, DeadNight{RunID: p.run, Node: p.node})
		}
		if scope == DeadExpired {
			return nil
		}
		for key, i := range latest {
			if err := s.blameCrash(ctx, tx, now, key, parts, &out[i]); err != nil {
				return err
			}
		}
		// The dead process's leases end now: the next claim rescues its tickets at once
		// instead of waiting out leases nobody will extend.
		node := s.opts.Node
		if scope == DeadAll {
			node = ""
		}
		_, err = tx.Exec(ctx, s.q.ExpireLeases, now, node)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("settle the nights of dead processes: %w", err)
	}
	return out, nil
}

func (s *Store) openParts(ctx context.Context, tx storedriver.Tx) ([]openPart, error) {
	rows, err := tx.Query(ctx, s.q.OpenRunNodes)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var parts []openPart
	for rows.Next() {
		var p openPart
		if err := rows.Scan(&p.run, &p.node, &p.started, &p.lease); err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, rows.Err()
}

// closeDeadPart finishes a dead node's part of a night and merges ErrProcessEnded into the
// night's outcome.
func (s *Store) closeDeadPart(ctx context.Context, tx storedriver.Tx, p openPart, ended int64) error {
	var after int64
	var prev Outcome
	var prevErr string
	var nodes int
	if err := tx.QueryRow(ctx, s.q.RunEnding, p.run).Scan(&after, &prev, &prevErr, &nodes); err != nil {
		return fmt.Errorf("run %d: %w", p.run, err)
	}
	if _, err := tx.Exec(ctx, s.q.FinishDeadRunNode, ended, p.run, p.node); err != nil {
		return err
	}
	msg := "failed: " + ErrProcessEnded.Error()
	if nodes > 1 {
		msg = p.node + ": " + msg
	}
	outcome, errText := mergeOutcome(prev, prevErr, OutcomeFailed, msg)
	_, err := tx.Exec(ctx, s.q.FinishRun, storedriver.FinishRunParams{EndedAt: ended, AfterEventID: after, ID: p.run,
		Outcome: string(outcome), Error: truncate(errText, maxRunError)}.Args()...)
	return err
}

// blameCrash looks at what the dead process of node (every node when "") was running when
// it died, and charges the crash to a ticket that was alone in flight.
func (s *Store) blameCrash(ctx context.Context, tx storedriver.Tx, now int64, node string, parts []openPart, d *DeadNight) error {
	since := int64(0)
	for _, p := range parts {
		if p.run == d.RunID && p.node == d.Node {
			since = p.started
		}
	}
	rows, err := tx.Query(ctx, s.q.InFlight, node, since)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var st State
		if err := rows.Scan(&id, &st); err != nil {
			rows.Close()
			return err
		}
		d.InFlight = append(d.InFlight, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(d.InFlight) != 1 {
		return nil
	}
	id := d.InFlight[0]
	t, err := scanTicket(tx.QueryRow(ctx, s.q.GetTicket, id))
	if err != nil {
		return fmt.Errorf("ticket %d: %w", id, err)
	}
	d.Blamed = id
	crashes := t.Crashes + 1
	reason := fmt.Sprintf("ticketd died (its part of night %d on %s ended without closing) while this ticket's attempt was the only one running: the crash counts against it (%d of night.max_rescues %d)",
		d.RunID, d.Node, crashes, s.opts.MaxRescues)
	if _, err := tx.Exec(ctx, s.q.AddCrash, now, id); err != nil {
		return err
	}
	if err := s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventCrash, From: t.State, To: t.State, Attempt: t.Attempts, Actor: "ticketd", Reason: reason}); err != nil {
		return err
	}
	if crashes < s.opts.MaxRescues || (t.State != StateRunning && t.State != StateQueued) {
		return nil
	}
	why := fmt.Sprintf("ticketd died %d times while this ticket's attempt was the only one running (night.max_rescues %d): it may be crashing its worker (memory, a process it starts); see its events and the daemon log",
		crashes, s.opts.MaxRescues)
	if _, err := tx.Exec(ctx, s.q.EscalateCrashed, storedriver.EscalateCrashedParams{FinishedAt: now, UpdatedAt: now, Reason: why, ID: id}.Args()...); err != nil {
		return err
	}
	d.Escalated = true
	return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventEscalated, From: t.State, To: StateEscalated, Attempt: t.Attempts, Actor: "ticketd", Reason: why})
}

// RecentDeaths reports, for node's latest n parts in nights (newest first), whether each
// died: a node whose last nights all died keeps crashing.
func (s *Store) RecentDeaths(ctx context.Context, node string, n int) ([]bool, error) {
	rows, err := s.rd.Query(ctx, s.q.RecentRunNodes, node, n)
	if err != nil {
		return nil, fmt.Errorf("recent nights of %s: %w", node, err)
	}
	defer rows.Close()
	var out []bool
	for rows.Next() {
		var died int
		var finished int64
		if err := rows.Scan(&died, &finished); err != nil {
			return nil, fmt.Errorf("recent nights of %s: %w", node, err)
		}
		out = append(out, died != 0)
	}
	return out, rows.Err()
}

// DescribeDead says in a line what SettleDead closed, for the log.
func DescribeDead(d []DeadNight) string {
	var parts []string
	for _, n := range d {
		p := fmt.Sprintf("night %d on %s", n.RunID, n.Node)
		switch {
		case n.Escalated:
			p += fmt.Sprintf(" (ticket %d was alone in flight: escalated, it keeps crashing its worker)", n.Blamed)
		case n.Blamed != 0:
			p += fmt.Sprintf(" (ticket %d was alone in flight: the crash counts against it)", n.Blamed)
		case len(n.InFlight) > 1:
			p += fmt.Sprintf(" (%d attempts in flight: the crash is the process's, no ticket's)", len(n.InFlight))
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}
