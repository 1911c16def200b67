// Package envtest helps the tests of environment recipes: a Python that makes virtualenvs
// offline, and wheels written by the test itself, a package index's worth of third-party
// packages with no index.
package envtest

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/scripts/testenv"
)

// Python is the interpreter the tests' recipes make environments with: Debian's, whose
// python3-venv and python3-pip make a virtualenv with pip offline.
const Python = "/usr/bin/python3"

// NeedVenv skips (or fails, where scripts/test.sh requires it) unless Python can make a
// virtualenv with pip and import pytest.
func NeedVenv(t testing.TB) {
	t.Helper()
	out, err := exec.Command(Python, "-c", "import venv, ensurepip, pytest, setuptools, wheel").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%s cannot make a virtualenv with pip: %v: %s", Python, err, strings.TrimSpace(string(out)))
	}
	testenv.Need(t, testenv.Venv, err)
}

// WriteWheel writes a pure-Python wheel of name (a package with files) into dir, as a
// package index would serve it, and returns its path: a third-party package the tests'
// recipes install with pip --no-index --find-links, no index needed.
func WriteWheel(t testing.TB, dir, name, version string, files map[string]string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, fmt.Sprintf("%s-%s-py3-none-any.whl", name, version))
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	info := fmt.Sprintf("%s-%s.dist-info", name, version)
	all := map[string]string{
		info + "/METADATA":      fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", name, version),
		info + "/WHEEL":         "Wheel-Version: 1.0\nGenerator: ticketd-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		info + "/top_level.txt": name + "\n",
	}
	for rel, content := range files {
		all[name+"/"+rel] = content
	}
	var record strings.Builder
	for rel, content := range all {
		w, err := zw.Create(rel)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
		sum := sha256.Sum256([]byte(content))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", rel, base64.RawURLEncoding.EncodeToString(sum[:]), len(content))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", info)
	w, _ := zw.Create(info + "/RECORD")
	w.Write([]byte(record.String()))
	if err := errors.Join(zw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return p
}
