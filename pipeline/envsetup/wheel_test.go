package envsetup

import (
	"testing"

	"github.com/ticketd/ticketd/pipeline/envsetup/envtest"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/scripts/testenv"
)

const venvPython = envtest.Python

func needVenv(t testing.TB) { t.Helper(); envtest.NeedVenv(t) }

func writeWheel(t testing.TB, dir, name, version string, files map[string]string) string {
	t.Helper()
	return envtest.WriteWheel(t, dir, name, version, files)
}

// testSandbox is bwrap where it works, else none (the isolation tests need bwrap and say so).
func testSandbox(t testing.TB) sandbox.Mode {
	t.Helper()
	if _, err := sandbox.Probe(t.Context(), ""); err != nil {
		if testenv.Have(t, testenv.Bubblewrap, err) {
			return sandbox.ModeBwrap
		}
		return sandbox.ModeNone
	}
	return sandbox.ModeBwrap
}
