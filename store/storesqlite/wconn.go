package storesqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// wtx is the writer connection inside a BEGIN IMMEDIATE transaction: the statements of one
// group commit run through it. The store drives the transaction itself (prepared BEGIN and
// COMMIT on a connection pinned for its lifetime) rather than through *sql.Tx, which starts
// a goroutine per transaction and per query inside it to watch for cancellation and
// prepares BEGIN and COMMIT anew each time: together about a sixth of a queue cycle's CPU.
//
// The statements run on the driver's connection itself (sql.Conn.Raw, held for the whole
// transaction). Per statement, database/sql's locking, argument checks and Rows machinery
// cost about 1.9k of the 9.9k instructions of a one-row UPDATE, and more for a query
// (cachegrind at GOMAXPROCS=1), and a queue cycle runs 14 statements here. The read pool
// keeps database/sql.
type wtx struct {
	e  *Engine
	dc driver.Conn
}

var _ storedriver.Tx = (*wtx)(nil)

// wstmt is a statement prepared on the writer's driver connection.
type wstmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// onWriter runs fn on the writer's driver connection. The caller holds wmu.
func (e *Engine) onWriter(fn func(tx *wtx) error) error {
	return e.wc.Raw(func(dc any) error {
		c, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("writer connection: driver connection %T is not a driver.Conn", dc)
		}
		return fn(&wtx{e: e, dc: c})
	})
}

// stmt returns query prepared once on the writer connection (kept until Close).
func (e *Engine) stmt(ctx context.Context, tx *wtx, query string) (wstmt, error) {
	if st, ok := e.stmts[query]; ok {
		return st, nil
	}
	pc, ok := tx.dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, fmt.Errorf("writer connection: driver connection %T cannot prepare with a context", tx.dc)
	}
	ds, err := pc.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	st, ok := ds.(wstmt)
	if !ok {
		ds.Close()
		return nil, fmt.Errorf("writer connection: driver statement %T lacks ExecContext or QueryContext", ds)
	}
	e.stmts[query] = st
	return st, nil
}

// bound returns query's prepared statement and args as the driver takes them.
func (e *Engine) bound(ctx context.Context, tx *wtx, query string, args []any) (wstmt, []driver.NamedValue, error) {
	st, err := e.stmt(ctx, tx, query)
	if err != nil {
		return nil, nil, err
	}
	nv, err := namedValues(args)
	return st, nv, err
}

func (e *Engine) exec(ctx context.Context, tx *wtx, query string, args ...any) (driver.Result, error) {
	st, nv, err := e.bound(ctx, tx, query, args)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, nv)
}

// Exec runs a statement and returns how many rows it changed.
func (tx *wtx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := tx.e.exec(ctx, tx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Insert runs an INSERT and returns the new row's rowid (ErrNoRows when it inserted none):
// RETURNING id would cost a temporary b-tree per execution (see claimLease).
func (tx *wtx) Insert(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := tx.e.exec(ctx, tx, query, args...)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, err
	} else if n == 0 {
		return 0, storedriver.ErrNoRows
	}
	return res.LastInsertId()
}

// Query runs a statement that returns rows; the caller closes them.
func (tx *wtx) Query(ctx context.Context, query string, args ...any) (storedriver.Rows, error) {
	st, nv, err := tx.e.bound(ctx, tx, query, args)
	if err != nil {
		return nil, err
	}
	r, err := st.QueryContext(ctx, nv)
	if err != nil {
		return nil, err
	}
	return &wrows{r: r, vals: make([]driver.Value, len(r.Columns()))}, nil
}

// QueryRow runs a statement for its first row, like sql.Row: the statement's error, or
// sql.ErrNoRows when there is no row, surfaces at Scan.
func (tx *wtx) QueryRow(ctx context.Context, query string, args ...any) storedriver.Row {
	st, nv, err := tx.e.bound(ctx, tx, query, args)
	if err != nil {
		return &wrow{err: err}
	}
	r, err := st.QueryContext(ctx, nv)
	return &wrow{r: r, err: err}
}

// wrow is one row of a writer query.
type wrow struct {
	r   driver.Rows
	err error
}

// Scan copies the first row's columns into dest and closes the rows.
func (w *wrow) Scan(dest ...any) error {
	if w.err != nil {
		return w.err
	}
	vals := make([]driver.Value, len(w.r.Columns()))
	err := w.r.Next(vals)
	switch {
	case errors.Is(err, io.EOF):
		err = sql.ErrNoRows
	case err == nil:
		err = assignRow(dest, vals)
	}
	if cerr := w.r.Close(); err == nil {
		err = cerr
	}
	return err
}

// wrows iterates the rows of a writer query, like sql.Rows.
type wrows struct {
	r    driver.Rows
	vals []driver.Value
	err  error
	done bool
}

func (w *wrows) Next() bool {
	if w.done {
		return false
	}
	if err := w.r.Next(w.vals); err != nil {
		if !errors.Is(err, io.EOF) {
			w.err = err
		}
		w.done = true
		return false
	}
	return true
}

func (w *wrows) Scan(dest ...any) error { return assignRow(dest, w.vals) }
func (w *wrows) Err() error             { return w.err }
func (w *wrows) Close() error           { w.done = true; return w.r.Close() }

// namedValues converts arguments the way database/sql does for a driver without its own
// checker: the common types directly, anything else through driver.DefaultParameterConverter
// (driver.Valuer, named kinds such as State).
func namedValues(args []any) ([]driver.NamedValue, error) {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		var v driver.Value
		switch x := a.(type) {
		case nil, int64, float64, bool, []byte, string, time.Time:
			v = x
		case int:
			v = int64(x)
		default:
			var err error
			if v, err = driver.DefaultParameterConverter.ConvertValue(a); err != nil {
				return nil, fmt.Errorf("argument %d (%T): %w", i+1, a, err)
			}
		}
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nv, nil
}

func assignRow(dest []any, vals []driver.Value) error {
	if len(dest) != len(vals) {
		return fmt.Errorf("scan: %d destinations for %d columns", len(dest), len(vals))
	}
	for i, d := range dest {
		if err := assign(d, vals[i]); err != nil {
			return fmt.Errorf("scan column %d: %w", i, err)
		}
	}
	return nil
}

// assign stores one column value (int64, float64, string, []byte or nil from this driver)
// in dest, for the destination types the store scans into.
func assign(dest any, v driver.Value) error {
	if sc, ok := dest.(sql.Scanner); ok {
		return sc.Scan(v)
	}
	switch d := dest.(type) {
	case *int64:
		if x, ok := v.(int64); ok {
			*d = x
			return nil
		}
	case *int:
		if x, ok := v.(int64); ok {
			*d = int(x)
			return nil
		}
	case *string:
		switch x := v.(type) {
		case string:
			*d = x
			return nil
		case []byte:
			*d = string(x)
			return nil
		}
	case *[]byte:
		switch x := v.(type) {
		case []byte:
			*d = x
			return nil
		case string:
			*d = []byte(x)
			return nil
		case nil:
			*d = nil
			return nil
		}
	case *float64:
		switch x := v.(type) {
		case float64:
			*d = x
			return nil
		case int64:
			*d = float64(x)
			return nil
		}
	case *bool:
		if x, ok := v.(int64); ok {
			*d = x != 0
			return nil
		}
	case *any:
		*d = v
		return nil
	}
	// Named types (State and the like) by their kind.
	rv := reflect.ValueOf(dest)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		e := rv.Elem()
		switch x := v.(type) {
		case string:
			if e.Kind() == reflect.String {
				e.SetString(x)
				return nil
			}
		case int64:
			switch e.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				e.SetInt(x)
				return nil
			}
		}
	}
	if v == nil {
		return fmt.Errorf("converting NULL to %T is unsupported", dest)
	}
	return fmt.Errorf("unsupported scan of %T into %T", v, dest)
}
