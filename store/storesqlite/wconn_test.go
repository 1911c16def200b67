package storesqlite

import (
	"database/sql"
	"database/sql/driver"
	"reflect"
	"strings"
	"testing"
)

// The writer's scans bypass database/sql: assign must store what the driver returns the way
// sql.Row.Scan would, and refuse what Scan refuses.
func TestAssign(t *testing.T) {
	type kind int
	tests := []struct {
		name    string
		v       driver.Value
		dest    func() any
		want    any
		wantErr string
	}{
		{"int64", int64(7), func() any { return new(int64) }, int64(7), ""},
		{"int", int64(7), func() any { return new(int) }, 7, ""},
		{"string", "a", func() any { return new(string) }, "a", ""},
		{"bytes into string", []byte("b"), func() any { return new(string) }, "b", ""},
		{"string into bytes", "c", func() any { return new([]byte) }, []byte("c"), ""},
		{"float", 1.5, func() any { return new(float64) }, 1.5, ""},
		{"int into float", int64(2), func() any { return new(float64) }, 2.0, ""},
		{"bool", int64(1), func() any { return new(bool) }, true, ""},
		{"named string kind", "running", func() any { return new(state) }, state("running"), ""},
		{"named int kind", int64(3), func() any { return new(kind) }, kind(3), ""},
		{"scanner", nil, func() any { return new(sql.NullInt64) }, sql.NullInt64{}, ""},
		{"scanner value", int64(4), func() any { return new(sql.NullInt64) }, sql.NullInt64{Int64: 4, Valid: true}, ""},
		{"NULL into int", nil, func() any { return new(int64) }, nil, "converting NULL to *int64 is unsupported"},
		{"NULL into string", nil, func() any { return new(string) }, nil, "converting NULL to *string is unsupported"},
		{"text into int", "x", func() any { return new(int64) }, nil, "unsupported scan of string into *int64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.dest()
			err := assign(d, tt.v)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("assign(%T, %#v) = %v, want error containing %q", d, tt.v, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("assign(%T, %#v): %v", d, tt.v, err)
			}
			got := deref(d)
			if b, ok := got.([]byte); ok {
				if string(b) != string(tt.want.([]byte)) {
					t.Fatalf("got %q, want %q", b, tt.want)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// state is a named string kind, as the store's State is.
type state string

func deref(p any) any { return reflect.ValueOf(p).Elem().Interface() }

func TestNamedValues(t *testing.T) {
	type repo string
	got, err := namedValues([]any{nil, 3, int64(4), "s", state("queued"), repo("r"), true, []byte("b"), 1.5})
	if err != nil {
		t.Fatal(err)
	}
	want := []driver.Value{nil, int64(3), int64(4), "s", "queued", "r", true, []byte("b"), 1.5}
	for i, nv := range got {
		if nv.Ordinal != i+1 {
			t.Errorf("argument %d: ordinal %d", i, nv.Ordinal)
		}
		if b, ok := nv.Value.([]byte); ok {
			if string(b) != "b" {
				t.Errorf("argument %d = %q, want %q", i, b, "b")
			}
			continue
		}
		if nv.Value != want[i] {
			t.Errorf("argument %d = %#v, want %#v", i, nv.Value, want[i])
		}
	}
	if _, err := namedValues([]any{struct{}{}}); err == nil || !strings.Contains(err.Error(), "argument 1 (struct {})") {
		t.Errorf("namedValues(struct{}{}) = %v, want an error naming argument 1", err)
	}
}
