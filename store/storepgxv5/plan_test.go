package storepgxv5

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/store/storetest"
)

// TestClaimWalksTheQueueInOrder: on a tickets table the planner has no statistics for (a
// fresh schema after a bulk intake, before autovacuum analyzes it), each claim statement's
// pick is an ordered walk of tickets_open that stops at the first free tickets, not a
// bitmap scan of every open ticket and a sort, whose cost grows with the queue.
func TestClaimWalksTheQueueInOrder(t *testing.T) {
	ctx := context.Background()
	url := storetest.FreshPostgres(t)
	e, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	// 6,000 tickets, half of them done, never analyzed.
	if _, err := e.pool.Exec(ctx, `INSERT INTO tickets (source, external_id, run_after, created_at, updated_at)
		SELECT 'plan', g::text, 0, 0, 0 FROM generate_series(1, 6000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE tickets SET state = 'done', finished_at = 1 WHERE id % 2 = 0`); err != nil {
		t.Fatal(err)
	}
	claimArgs := []any{int64(1000), 1, "w1", "node", int64(2000), "claimed", "queued", "running", ""}
	batchArgs := []any{int64(1000), 1, []string{"w1", "w2", "w3"}, "node", int64(2000), "claimed", "queued", "running", ""}
	cases := []struct {
		name  string
		query string
		args  []any
	}{
		{"batch", claimBatches[0], batchArgs},
		{"one", claimQueries[0][0][0], claimArgs},
		{"one unpredicted", claimQueries[1][0][0], claimArgs},
		{"one with rescue", claimQueries[0][0][1], claimArgs},
	}
	plan := func(t *testing.T, q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}, query string, args []any) string {
		t.Helper()
		rows, err := q.Query(ctx, "EXPLAIN "+query, args...)
		if err != nil {
			t.Fatalf("EXPLAIN: %v", err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("EXPLAIN: %v", err)
		}
		return strings.Join(lines, "\n")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := plan(t, e.pool, c.query, c.args)
			if strings.Contains(p, "Bitmap") || !strings.Contains(p, "Index Scan using tickets_open") {
				t.Errorf("the claim's plan is not an ordered walk of tickets_open:\n%s", p)
			}
		})
	}
	// The case is one where the planner's defaults do pick the bitmap scan; if a server no
	// longer does, the test above still holds but proves less.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if p := plan(t, conn, claimBatches[0], batchArgs); !strings.Contains(p, "Bitmap") {
		t.Logf("with the server's defaults this server plans the batch claim without a bitmap scan too:\n%s", p)
	}
}
