package storepgxv5

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/store/storedriver"
)

// ptx is a write transaction on one connection. It sends BEGIN together with its first
// statement, in one round trip (a pipelined batch), instead of waiting for BEGIN's answer
// first: a transition costs its statements and its COMMIT, nothing more.
type ptx struct {
	conn    *pgx.Conn
	started bool
}

var _ storedriver.Tx = (*ptx)(nil)

// first sends BEGIN and sql as one batch and returns the batch with BEGIN's result read;
// the caller reads sql's result and closes it. nil once the transaction has begun.
func (t *ptx) first(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	if t.started {
		return nil, nil
	}
	t.started = true
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sql, args...)
	br := t.conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	return br, nil
}

func (t *ptx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return 0, err
	}
	if br == nil {
		tag, err := t.conn.Exec(ctx, sql, args...)
		return tag.RowsAffected(), err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag.RowsAffected(), err
}

func (t *ptx) Query(ctx context.Context, sql string, args ...any) (storedriver.Rows, error) {
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	if br == nil {
		return querier{t.conn}.Query(ctx, sql, args...)
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &prows{r: rows, after: br.Close}, nil
}

func (t *ptx) QueryRow(ctx context.Context, sql string, args ...any) storedriver.Row {
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	if br == nil {
		return prow{t.conn.QueryRow(ctx, sql, args...)}
	}
	return batchRow{r: br.QueryRow(), br: br}
}

// Insert runs an INSERT ... RETURNING id.
func (t *ptx) Insert(ctx context.Context, sql string, args ...any) (int64, error) {
	var id int64
	err := t.QueryRow(ctx, sql, args...).Scan(&id)
	return id, err
}

// Claim is one statement: the pick (FOR UPDATE SKIP LOCKED) and the lease.
func (t *ptx) Claim(ctx context.Context, p storedriver.ClaimParams) (storedriver.Row, error) {
	if p.Paused == "" {
		return t.QueryRow(ctx, claimQuery, p.Now, p.MaxRescues, p.Worker, p.Node, p.Expires), nil
	}
	return t.QueryRow(ctx, claimPausedQuery, p.Now, p.MaxRescues, p.Worker, p.Node, p.Expires, p.Paused), nil
}

// batchRow is the first statement's row: scanning it also closes the batch.
type batchRow struct {
	r  pgx.Row
	br pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := prow{r.r}.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
