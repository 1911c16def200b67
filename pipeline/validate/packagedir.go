package validate

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// A setuptools project may keep its packages in a folder other than src/: PyYAML's setup.py
// says package_dir={'': 'lib'}. Like a src/ layout, nothing puts that folder on the path in a
// fresh worktree; unlike the "No module named" a src/ layout meets, a distribution of the same
// name installed for the checks' interpreter (Debian's python3-yaml) imports silently, and then
// every check tests the installed copy and never the worktree's code.

// setupPyPackageDir matches setup.py's package_dir mapping of the root package:
// package_dir={"": "lib"}, in either quotes (a dict(...) spelling is not read).
var setupPyPackageDir = regexp.MustCompile(`package_dir\s*=\s*\{\s*(?:''|"")\s*:\s*['"]([^'"]+)['"]`)

// inlineRootDir matches the root package's entry of an inline table: {"" = "lib"}.
var inlineRootDir = regexp.MustCompile(`(?:""|'')\s*=\s*["']([^"']+)["']`)

// packageFolder is the folder, slash-separated and relative to dir, that the project's
// packaging configuration keeps its packages in: setuptools' package_dir for the root package
// (setup.py, setup.cfg [options], pyproject.toml [tool.setuptools.package-dir]) or
// [tool.setuptools.packages.find] where. "src" when none says (the convention, and where
// other build backends look); a declared folder counts only when it is inside dir, is not the
// root itself, and exists.
func packageFolder(dir string) string { return PackageFolder(dir) }

// PackageFolder is packageFolder, for the environment's import probe: the folder the checks
// put on PYTHONPATH is the one whose packages it must find in the worktree.
func PackageFolder(dir string) string {
	for _, f := range []func(string) string{pyprojectPackageDir, setupCfgPackageDir, setupPyDeclaredDir} {
		if folder := f(dir); folder != "" {
			folder = path.Clean(strings.TrimSpace(folder))
			if folder == "." || folder == "src" || path.IsAbs(folder) || strings.HasPrefix(folder, "..") {
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(folder))); err == nil && fi.IsDir() {
				return folder
			}
		}
	}
	return "src"
}

func setupPyDeclaredDir(dir string) string {
	if m := setupPyPackageDir.FindSubmatch(readRegular(filepath.Join(dir, "setup.py"), maxLayoutScanBytes)); m != nil {
		return string(m[1])
	}
	return ""
}

// setupCfgPackageDir reads [options] package_dir from setup.cfg: "=lib" on the key's line or
// on an indented line of its own.
func setupCfgPackageDir(dir string) string {
	data := readRegular(filepath.Join(dir, "setup.cfg"), maxLayoutScanBytes)
	section, inKey := "", false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "[") {
			section, inKey = strings.Trim(line, "[] "), false
			continue
		}
		if section != "options" || line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		indented := raw != strings.TrimLeft(raw, " \t")
		if !indented {
			key, value, ok := strings.Cut(line, "=")
			inKey = ok && strings.TrimSpace(key) == "package_dir"
			if !inKey {
				continue
			}
			line = strings.TrimSpace(value)
		} else if !inKey {
			continue
		}
		if root, ok := strings.CutPrefix(line, "="); ok && strings.TrimSpace(root) != "" {
			return strings.TrimSpace(root)
		}
	}
	return ""
}

// pyprojectPackageDir reads pyproject.toml's [tool.setuptools.package-dir] "" = "lib", or
// the first folder of [tool.setuptools.packages.find] where = ["lib"].
func pyprojectPackageDir(dir string) string {
	data := readRegular(filepath.Join(dir, "pyproject.toml"), 1<<20)
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			table = strings.Trim(line, "[] ")
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case table == "tool.setuptools.package-dir" && (key == `""` || key == `''`):
			return strings.Trim(value, `"'`)
		case table == "tool.setuptools" && key == "package-dir":
			if m := inlineRootDir.FindStringSubmatch(value); m != nil {
				return m[1]
			}
		case table == "tool.setuptools.packages.find" && key == "where":
			first, _, _ := strings.Cut(strings.Trim(value, "[] "), ",")
			return strings.Trim(strings.TrimSpace(first), `"'`)
		}
	}
	return ""
}
