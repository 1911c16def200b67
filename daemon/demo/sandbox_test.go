package demo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// TestDemoWithoutBwrap: where bubblewrap is missing the demo still runs, with sandbox: none,
// and says so in its output.
func TestDemoWithoutBwrap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole demo night")
	}
	bin := t.TempDir()
	for _, name := range []string{"git", "python3", "pytest", "sh"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if name == "pytest" {
				continue
			}
			t.Fatalf("%s is needed: %v", name, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin) // everything the demo needs, but no bwrap
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "demo"), Stdout: &out})
	if err != nil {
		t.Fatalf("demo without bwrap: %v\n%s", err, out.String())
	}
	if res.Sandbox != sandbox.ModeNone || !strings.Contains(out.String(), "WITHOUT the sandbox (sandbox: none)") {
		t.Errorf("sandbox %q; output does not say it fell back:\n%s", res.Sandbox, out.String())
	}
	for _, tk := range res.Tickets {
		if tk.State != "done" {
			t.Errorf("ticket %d ended %s", tk.ID, tk.State)
		}
	}
}
