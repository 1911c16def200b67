package storesqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ticketd/ticketd/store/storedriver"
	"github.com/ticketd/ticketd/store/storesqlite"
)

// TestSchemaTablesCoverTheSchema: the tables a copy between engines moves are every table
// of the schema with every column, so a migration that adds one cannot be forgotten there.
func TestSchemaTablesCoverTheSchema(t *testing.T) {
	ctx := context.Background()
	e, err := storesqlite.Open(ctx, filepath.Join(t.TempDir(), "x.db"), storesqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rows, err := e.DB().QueryContext(ctx, `SELECT m.name, p.name FROM sqlite_schema m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name != 'schema_migrations' ORDER BY m.name, p.cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	schema := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		schema[table] = append(schema[table], col)
	}
	listed := map[string][]string{}
	for _, tb := range storedriver.SchemaTables {
		listed[tb.Name] = slices.Sorted(slices.Values(tb.Columns))
	}
	for table, cols := range schema {
		slices.Sort(cols)
		if !slices.Equal(cols, listed[table]) {
			t.Errorf("table %s: schema columns %v, SchemaTables %v", table, cols, listed[table])
		}
	}
	if len(listed) != len(schema) {
		t.Errorf("SchemaTables lists %d tables, the schema has %d", len(listed), len(schema))
	}
}
