package storedriver_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ticketd/ticketd/store/storedriver"
)

func TestReadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name     string
		first    int
		files    fstest.MapFS
		versions []int
		err      string
	}{
		{"in order", 1, fstest.MapFS{"m/002_b.sql": file("B"), "m/001_a.sql": file("A")}, []int{1, 2}, ""},
		{"from a later baseline", 13, fstest.MapFS{"m/013_base.sql": file("X"), "m/014_next.sql": file("Y")}, []int{13, 14}, ""},
		{"a gap", 1, fstest.MapFS{"m/001_a.sql": file("A"), "m/003_c.sql": file("C")}, nil, "version 3 where 2 belongs"},
		{"a repeat", 1, fstest.MapFS{"m/001_a.sql": file("A"), "m/001_b.sql": file("B")}, nil, "version 1 where 2 belongs"},
		{"not from the first", 1, fstest.MapFS{"m/002_b.sql": file("B")}, nil, "version 2 where 1 belongs"},
		{"a misnamed file", 1, fstest.MapFS{"m/001_a.sql": file("A"), "m/2_b.sql": file("B")}, nil, "want NNN_name.sql"},
		{"empty", 1, fstest.MapFS{"m/README": file("")}, nil, "want NNN_name.sql"},
		{"no folder", 1, fstest.MapFS{}, nil, "read migrations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := storedriver.ReadMigrations(tt.files, "m", tt.first)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ReadMigrations = %v, %v; want error containing %q", ms, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.Version)
			}
			if len(got) != len(tt.versions) || got[0] != tt.versions[0] || got[len(got)-1] != tt.versions[len(tt.versions)-1] {
				t.Errorf("versions = %v; want %v", got, tt.versions)
			}
		})
	}
}
