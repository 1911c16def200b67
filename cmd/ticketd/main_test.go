package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badConfig, []byte("night:\n  wokers: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{name: "help", args: []string{"help"}, code: 0, wantStdout: "ticketd demo"},
		{name: "unknown command", args: []string{"fix-everything"}, code: 2, wantStderr: "try: ticketd help"},
		{name: "missing config", args: []string{"once", "--config", filepath.Join(dir, "nope.yaml")}, code: 2, wantStderr: "read config"},
		{name: "bad config names line and key", args: []string{"once", "--config", badConfig}, code: 2, wantStderr: "bad.yaml:2: night.wokers: unknown key"},
		{name: "bad log level", args: []string{"demo", "--log-level", "loud"}, code: 2, wantStderr: "--log-level"},
		{name: "stray argument", args: []string{"once", "extra"}, code: 2, wantStderr: "unexpected argument"},
		{name: "demo", args: []string{"demo", "--dir", filepath.Join(dir, "demo")}, code: 0, wantStdout: "SCRIPTED MODEL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("run(%q) = %d, want %d\nstdout: %s\nstderr: %s", tt.args, code, tt.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("run(%q) stdout lacks %q:\n%s", tt.args, tt.wantStdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("run(%q) stderr lacks %q:\n%s", tt.args, tt.wantStderr, stderr.String())
			}
		})
	}
}
