package validate

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// GeneratedFile is a file of the project's own package that its build writes and its
// checkout lacks (a version file of setuptools-scm or hatch-vcs), written into the worktree
// for each run of a check and removed after it (Condition.Files).
type GeneratedFile struct {
	Path    string `json:"path"` // slash-separated, relative to the worktree
	Content string `json:"content"`
}

// buildConfigs are the files that say where a project's build writes its version file:
// setuptools-scm's version_file / write_to, hatch-vcs's version-file.
var buildConfigs = []string{"pyproject.toml", "setup.cfg", "setup.py"}

// versionFileContent is what setuptools-scm and hatch-vcs write, with a version that says it
// is none: the checks need the module to import, not the release it would name.
const versionFileContent = `# Written by ticketd for its checks: the project's build generates this file, and the
# checkout has none. It is removed after each check and never committed.
__version__ = version = "0.0.0+ticketd"
__version_tuple__ = version_tuple = (0, 0, 0, "ticketd")
__commit_id__ = commit_id = None
`

// generatedVersion works around tests that fail with "No module named 'pkg._version'" where
// pkg is the project's own package (at the root, in src/ or lib/) and its build
// configuration names pkg/_version.py as the file it writes: every import of the package
// fails in a checkout nobody built, and an environment's editable install writes the file
// into the copy it was built from, not into the worktree. The file is written for the
// checks.
func generatedVersion(dir string, c Check, r Result) (Condition, bool) {
	if c.Kind != KindPytest && c.Kind != KindUnittest {
		return Condition{}, false
	}
	for _, mod := range missingModules(r) {
		p, config, ok := versionFile(dir, mod)
		if !ok || hasGenerated(c.Generated, p) {
			continue
		}
		return Condition{Files: []GeneratedFile{{Path: p, Content: versionFileContent}}, Notes: []string{fmt.Sprintf(
			"%s written for the checks (version 0.0.0+ticketd): the base run failed with No module named '%s', a file the project's build generates (%s names it) and the checkout lacks; it is removed after each check and never committed (commit it, or make its import optional, for the checks to see the real version)",
			p, mod, config)}}, true
	}
	return Condition{}, false
}

// noMetadata is what importlib.metadata raises for a distribution nothing installed:
// "importlib.metadata.PackageNotFoundError: No package metadata was found for click".
var noMetadata = regexp.MustCompile(`PackageNotFoundError: No package metadata was found for ([A-Za-z0-9][A-Za-z0-9._-]*)`)

// metadataFileContent is an egg-info file's metadata (importlib.metadata reads a file named
// NAME-VERSION.egg-info as the distribution's PKG-INFO), with a version that says it is none.
const metadataFileContent = "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: written by ticketd for its checks: the project is not installed; removed after each check\n"

// noVersion is the version a generated metadata file gives when the project states none.
const noVersion = "0.0.0+ticketd"

// projectVersion is the static version of pyproject.toml's [project] table (wcwidth's tests
// compare __version__ with the metadata's), "" when it has none (a dynamic one).
func projectVersion(dir string) string {
	data, err := sandbox.ReadReport(filepath.Join(dir, "pyproject.toml"), 1<<20)
	if err != nil {
		return ""
	}
	inProject := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			inProject = line == "[project]"
			continue
		}
		if m := staticVersion.FindStringSubmatch(line); inProject && m != nil {
			return m[1]
		}
	}
	return ""
}

// staticVersion is a `version = "1.2.3"` line; the value is kept to what a version holds.
var staticVersion = regexp.MustCompile(`^version\s*=\s*["']([A-Za-z0-9.+!_-]{1,64})["']`)

// generatedMetadata works around tests that fail with importlib.metadata's
// PackageNotFoundError for the project's own distribution: its code or tests read their
// version from the installed metadata (click's __version__, `version("pkg")` in a package's
// __init__.py), and a checkout the checks import from src/ or the root has none. A one-file
// egg-info of that name is written beside the package (src/ or the root, which the checks
// import it from) for each check and removed after it. A distribution that is not the
// repository's own package (a missing dependency's) is left as it is: installing it is the
// remedy.
func generatedMetadata(dir string, c Check, r Result) (Condition, bool) {
	if c.Kind != KindPytest && c.Kind != KindUnittest {
		return Condition{}, false
	}
	texts := []string{r.Output}
	for _, f := range r.Findings {
		texts = append(texts, f.Message)
	}
	for _, text := range texts {
		for _, m := range noMetadata.FindAllStringSubmatch(text, -1) {
			dist := m[1]
			pkg := strings.NewReplacer("-", "_", ".", "_").Replace(dist)
			for _, folder := range []string{"src", "."} {
				if !importable(filepath.Join(dir, folder), pkg) && !importable(filepath.Join(dir, folder), strings.ToLower(pkg)) {
					continue
				}
				version := cmp.Or(projectVersion(dir), noVersion)
				p := path.Join(folder, dist+"-"+version+".egg-info")
				if hasGenerated(c.Generated, p) {
					return Condition{}, false
				}
				return Condition{Files: []GeneratedFile{{Path: p, Content: fmt.Sprintf(metadataFileContent, dist, version)}}, Notes: []string{fmt.Sprintf(
					"%s written for the checks (version %s): the base run failed with PackageNotFoundError for %s, the repository's own package, which the checks import from %s without installing it; it is removed after each check and never committed (install the project into the checks' environment, a repos.<name>.setup recipe, for its real metadata)",
					p, version, dist, folderName(folder))}}, true
			}
		}
	}
	return Condition{}, false
}

// folderName names a slash-separated folder relative to the worktree for a note.
func folderName(folder string) string {
	if folder == "." {
		return "the repository's root"
	}
	return folder + "/"
}

// versionFile is the path of module, when it is a version module of the project's own
// package that dir lacks and that a build configuration at dir's root names, and that file.
func versionFile(dir, module string) (p, config string, ok bool) {
	parts := strings.Split(module, ".")
	if len(parts) < 2 || !strings.Contains(strings.ToLower(parts[len(parts)-1]), "version") {
		return "", "", false
	}
	for _, folder := range []string{".", "src", "lib"} {
		pkg := path.Join(append([]string{folder}, parts[:len(parts)-1]...)...)
		if !isDir(filepath.Join(dir, filepath.FromSlash(pkg))) || !exists(filepath.Join(dir, filepath.FromSlash(pkg), "__init__.py")) {
			continue
		}
		p = path.Join(pkg, parts[len(parts)-1]+".py")
		if exists(filepath.Join(dir, filepath.FromSlash(p))) {
			return "", "", false // present: the failure is another one
		}
		for _, name := range buildConfigs {
			// Read as a check may have left it (the baseline's checks ran in dir just now):
			// never through a symlink, never waiting on a FIFO, never past 1 MiB.
			data, err := sandbox.ReadReport(filepath.Join(dir, name), 1<<20)
			if err == nil && strings.Contains(string(data), p) {
				return p, name, true
			}
		}
		return "", "", false
	}
	return "", "", false
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func hasGenerated(files []GeneratedFile, p string) bool {
	for _, f := range files {
		if f.Path == p {
			return true
		}
	}
	return false
}

// writeGenerated writes files into dir for one check and returns what removes them again:
// only a file that is absent is written (the maker's own version of it wins), never through
// a symlink nor outside dir.
func writeGenerated(dir string, files []GeneratedFile) (remove func(), err error) {
	var written []string
	remove = func() {
		for _, p := range written {
			_ = os.Remove(p)
		}
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return remove, fmt.Errorf("write generated files into %s: %w", dir, err)
	}
	for _, f := range files {
		rel := filepath.FromSlash(f.Path)
		if !filepath.IsLocal(rel) {
			continue
		}
		parent, err := filepath.EvalSymlinks(filepath.Join(root, filepath.Dir(rel)))
		if err != nil || (parent != root && !strings.HasPrefix(parent, root+string(filepath.Separator))) {
			continue // its package is gone or leads elsewhere: the check runs without it
		}
		p := filepath.Join(parent, filepath.Base(rel))
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return remove, fmt.Errorf("write generated file %s: %w", f.Path, err)
		}
		_, werr := fh.WriteString(f.Content)
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		written = append(written, p)
		if werr != nil {
			return remove, fmt.Errorf("write generated file %s: %w", f.Path, werr)
		}
	}
	return remove, nil
}
