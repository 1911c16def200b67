package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A repository's setup: parsed with its options; with a recipe an unset python: stays unset
// (the environment's interpreter, known at night), never the operator's .venv; mistakes are
// named with their key.
func TestSetupRecipe(t *testing.T) {
	dir := t.TempDir()
	venv := filepath.Join(dir, "app", ".venv", "bin", "python")
	os.MkdirAll(filepath.Dir(venv), 0o755)
	os.WriteFile(venv, []byte("#!/bin/sh\n"), 0o755)
	withSetup := strings.Replace(valid, "    checks:", "    setup:\n      commands: ['\"$PYTHON\" -m venv \"$ENV\"']\n      network: true\n      pass_env: [INDEX_TOKEN]\n      verify_every: 48h\n    checks:", 1)
	c, err := Parse(filepath.Join(dir, "etc", "cfg.yaml"), []byte(withSetup))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Repos["app"]
	if r.Setup == nil || !r.Setup.Network || r.Setup.VerifyEvery != 48*time.Hour || r.Setup.PassEnv[0] != "INDEX_TOKEN" {
		t.Fatalf("setup = %+v", r.Setup)
	}
	if r.Python != "" || r.Checks[0].Python != "" {
		t.Errorf("python = %q, checks[0].python = %q; want unset with a recipe (not %s)", r.Python, r.Checks[0].Python, venv)
	}
	without, err := Parse(filepath.Join(dir, "etc", "cfg.yaml"), []byte(valid))
	if err != nil || without.Repos["app"].Checks[0].Python != venv {
		t.Errorf("without a recipe: python %q, %v; want the repository's .venv", without.Repos["app"].Checks[0].Python, err)
	}
	for _, tc := range []struct{ name, setup, want string }{
		{"no commands", "    setup: {network: true}\n", "repos.app.setup.commands: at least one is required"},
		{"credential passed", "    setup: {commands: [x], pass_env: [GITHUB_TOKEN]}\n", "repos.app.setup.pass_env[0]: GITHUB_TOKEN is the GitHub token"},
		{"bad name", "    setup: {commands: [x], pass_env: [\"A B\"]}\n", `repos.app.setup.pass_env[0]: "A B" is not an environment variable name`},
		{"negative verify", "    setup: {commands: [x], verify_every: -1h}\n", "repos.app.setup.verify_every: must be >= 0"},
		{"unknown key", "    setup: {commands: [x], netwrok: true}\n", "netwrok"},
	} {
		_, err := Parse(filepath.Join(dir, "etc", "cfg.yaml"), []byte(strings.Replace(valid, "    checks:", tc.setup+"    checks:", 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v; want %q", tc.name, err, tc.want)
		}
	}
}
