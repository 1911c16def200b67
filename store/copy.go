package store

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// CopyReport counts the rows CopyTo copied, per table in copy order.
type CopyReport struct {
	Tables []TableCount `json:"tables"`
}

// TableCount is one table's rows.
type TableCount struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
}

// ErrNotEmpty is returned by CopyTo when the target already holds tickets, nights or
// baselines.
var ErrNotEmpty = fmt.Errorf("the target store is not empty")

// CopyTo copies every row of this store, history included (events, model and tool calls,
// nights, artifacts, baselines), into dst, which must be empty and at the same schema
// version: moving a SQLite queue onto PostgreSQL. The rows land in one transaction of dst,
// so a copy that fails leaves dst empty; ids are kept, and dst's id generators move past
// them. Stop every daemon using this store first: rows written during the copy may be
// missed.
func (s *Store) CopyTo(ctx context.Context, dst *Store) (CopyReport, error) {
	var rep CopyReport
	sv, err := s.SchemaVersion(ctx)
	if err != nil {
		return rep, err
	}
	dv, err := dst.SchemaVersion(ctx)
	if err != nil {
		return rep, err
	}
	if sv != dv {
		return rep, fmt.Errorf("copy %s to %s: schema v%d and v%d differ; open both with the same ticketd", s.Path(), dst.Path(), sv, dv)
	}
	if len(s.q.Tables) != len(dst.q.Tables) {
		return rep, fmt.Errorf("copy %s to %s: the engines list %d and %d tables", s.Path(), dst.Path(), len(s.q.Tables), len(dst.q.Tables))
	}
	for _, probe := range []string{"tickets", "runs", "baselines"} {
		var n int64
		if err := dst.rd.QueryRow(ctx, "SELECT count(*) FROM "+probe).Scan(&n); err != nil {
			return rep, fmt.Errorf("copy to %s: count %s: %w", dst.Path(), probe, err)
		}
		if n > 0 {
			return rep, fmt.Errorf("copy to %s: %w: it holds %d %s; copy into a new, empty database (or schema)", dst.Path(), ErrNotEmpty, n, probe)
		}
	}
	// One transaction of dst however long the history: a deadline of hours, not the
	// engine's per-write bound.
	wctx, cancel := context.WithTimeout(ctx, 6*time.Hour)
	defer cancel()
	err = dst.write(wctx, "copy store", func(wctx context.Context, tx storedriver.Tx) error {
		rep = CopyReport{}
		for i, from := range s.q.Tables {
			to := dst.q.Tables[i]
			if from.Name != to.Name || len(from.Columns) != len(to.Columns) {
				return fmt.Errorf("table %d: %s (%d columns) here, %s (%d columns) there", i, from.Name, len(from.Columns), to.Name, len(to.Columns))
			}
			n, err := copyTable(ctx, s.rd, wctx, tx, from, to)
			if err != nil {
				return fmt.Errorf("copy %s: %w", from.Name, err)
			}
			rep.Tables = append(rep.Tables, TableCount{Table: from.Name, Rows: n})
		}
		_, err := tx.Exec(wctx, dst.q.AfterCopy)
		return err
	})
	if err != nil {
		return CopyReport{}, fmt.Errorf("copy %s to %s: %w", s.Path(), dst.Path(), err)
	}
	return rep, nil
}

// copyTable streams from's rows into to inside tx and returns how many it copied.
func copyTable(rctx context.Context, rd storedriver.Reader, wctx context.Context, tx storedriver.Tx, from, to storedriver.Table) (int64, error) {
	rows, err := rd.Query(rctx, from.Select)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	vals := make([]any, len(from.Columns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		if _, err := tx.Exec(wctx, to.Insert, vals...); err != nil {
			return n, fmt.Errorf("row %d: %w", n+1, err)
		}
		n++
	}
	return n, rows.Err()
}
