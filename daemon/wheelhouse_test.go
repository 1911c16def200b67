package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/envsetup"
	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// An offline recipe's wheelhouse that the sandbox hides, that does not exist, or whose wheels
// the recipe's user cannot read is said at start-up, naming the fix, instead of failing the
// night's build with pip's "no matching distribution".
func TestWheelhouseCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wheels := filepath.Join(dir, "wheels")
	if err := os.Mkdir(wheels, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wheels, "shinyfmt-1.0-py3-none-any.whl"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(dir, "private")
	if err := os.Mkdir(private, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(private, "pytest_cov-7.0-py3-none-any.whl"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	recipe := func(network bool, links string) *envsetup.Recipe {
		return &envsetup.Recipe{Network: network, Commands: []string{`"$PYTHON" -m venv "$ENV"`,
			`"$ENV/bin/pip" install --no-index --find-links ` + links + ` -e ".[test]"`}}
	}
	for _, tc := range []struct {
		name   string
		recipe *envsetup.Recipe
		mode   sandbox.Mode
		paths  []string
		want   string // "" means no problem
	}{
		{"hidden from the sandbox", recipe(false, wheels), sandbox.ModeBwrap, nil, "is hidden from the sandbox the recipe runs in: add it to sandbox_paths"},
		{"in sandbox_paths", recipe(false, wheels), sandbox.ModeBwrap, []string{dir}, ""},
		{"as a file URL, in sandbox_paths", recipe(false, "file://"+wheels), sandbox.ModeBwrap, []string{wheels}, ""},
		{"no such folder", recipe(false, filepath.Join(dir, "nowhere")), sandbox.ModeBwrap, []string{dir}, "is not a folder on this machine"},
		{"no sandbox", recipe(false, wheels), sandbox.ModeNone, nil, ""},
		{"with the network", recipe(true, filepath.Join(dir, "nowhere")), sandbox.ModeBwrap, nil, ""},
		{"a relative wheelhouse is the checkout's", recipe(false, "wheels"), sandbox.ModeBwrap, nil, ""},
		{"no recipe", nil, sandbox.ModeBwrap, nil, ""},
	} {
		cfg := config.Config{Sandbox: tc.mode, SandboxPaths: tc.paths}
		got := wheelhouseCheck("app", config.Repo{Setup: tc.recipe}, cfg)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: wheelhouseCheck = %q; want it to say %q", tc.name, got, tc.want)
		}
		if tc.want != "" && !strings.HasPrefix(got, "repos.app.setup: ") {
			t.Errorf("%s: %q does not name the recipe", tc.name, got)
		}
	}
	// Without --find-links of its own, the recipe's pip reads the folders of its
	// configuration (here PIP_CONFIG_FILE, set in the command) and passes over those it
	// cannot read: the build goes without wheels only when it can read none of them.
	conf := filepath.Join(dir, "pip.conf")
	if err := os.WriteFile(conf, []byte("[global]\nfind-links =\n    "+wheels+"\n    "+filepath.Join(dir, "gone")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	configured := &envsetup.Recipe{Commands: []string{`"$PYTHON" -m venv "$ENV"`,
		`PIP_CONFIG_FILE=` + conf + ` "$ENV/bin/pip" install --no-index -e ".[test]"`}}
	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"one of the configured folders is readable", []string{dir}, ""},
		{"none is", nil, "the wheelhouse " + wheels + " (find-links in " + conf + ") is hidden from the sandbox the recipe runs in: add it to sandbox_paths; the wheelhouse " + filepath.Join(dir, "gone") + " (find-links in " + conf + ") is not a folder on this machine"},
	} {
		got := wheelhouseCheck("app", config.Repo{Setup: configured}, config.Config{Sandbox: sandbox.ModeBwrap, SandboxPaths: tc.paths})
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("configured, %s: wheelhouseCheck = %q; want it to say %q", tc.name, got, tc.want)
		}
	}
	t.Run("unreadable wheel", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("only ticketd as root runs the recipe as another user")
		}
		got := wheelhouseCheck("app", config.Repo{Setup: recipe(false, private)}, config.Config{Sandbox: sandbox.ModeBwrap, SandboxPaths: []string{dir}})
		if want := "holds pytest_cov-7.0-py3-none-any.whl, which the checks' user the recipe runs as cannot read: chmod -R a+rX " + private; !strings.Contains(got, want) {
			t.Errorf("wheelhouseCheck = %q; want it to say %q", got, want)
		}
	})
}
