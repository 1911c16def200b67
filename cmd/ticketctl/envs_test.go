package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestEnvsShowsTheWholeError: a failed setup's error carries what to do at its end (the
// distribution the wheelhouse lacks), past the table's column width: ticketctl envs prints
// it whole under the table, with the recipe's output.
func TestEnvsShowsTheWholeError(t *testing.T) {
	f := setup(t)
	s, err := store.Open(context.Background(), f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const why = `environment setup of sample failed at command 2 ("$ENV/bin/python" -m pip install -q --no-index --find-links /srv/wheelhouse/python3.11 -r requirements.txt): exit 1; ` +
		`pip found no distribution of colorlib>=2: add its wheel to the wheelhouse the recipe's --find-links names`
	if err := s.RecordEnvironment(context.Background(), store.Environment{Repo: "sample", Key: "k1", Error: why,
		Output: "ERROR: No matching distribution found for colorlib>=2\n", Took: time.Second}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r := ctl(t, "--db", f.db, "envs")
	mustContain(t, "envs", r.stdout, "FAILED", "pip found no distribution of colorlib>=2: add its wheel to the wheelhouse", "No matching distribution found for colorlib>=2")
	if strings.Count(r.stdout, "add its wheel") != 1 {
		t.Errorf("envs prints the error %d times; want once:\n%s", strings.Count(r.stdout, "add its wheel"), r.stdout)
	}
}
