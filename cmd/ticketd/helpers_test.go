package main

import (
	"os/exec"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
)

// startScripted starts the scripted model (a test double) with cases and returns its base
// URL; it is closed when the test ends.
func startScripted(t *testing.T, cases []scriptedmodel.Case, opts scriptedmodel.Options) string {
	t.Helper()
	server, err := scriptedmodel.New(cases, opts)
	if err != nil {
		t.Fatal(err)
	}
	url, err := server.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return url
}

// commitAll makes dir a git repository on branch main holding everything in it.
func commitAll(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "base"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t.invalid"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
