package envsetup

import (
	"bufio"
	"bytes"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// maxIncludes bounds how many requirement files includes may add to the inputs.
const maxIncludes = 256

// withIncludes adds to inputs the tracked files that pip would also read: those named by a
// -r/--requirement or -c/--constraint option in an input requirements file (relative to that
// file, followed transitively) or in a recipe command (relative to the checkout's root). A
// requirements.txt that says `-r ci/test.txt` makes ci/test.txt part of the key, so a change
// there rebuilds the environment instead of hiding behind the cache until verify_every.
// Only tracked regular files inside the checkout are added; URLs and missing files are not.
func withIncludes(dir string, files, inputs, commands []string) []string {
	tracked := make(map[string]bool, len(files))
	for _, f := range files {
		tracked[f] = true
	}
	seen := map[string]bool{}
	for _, in := range inputs {
		seen[in] = true
	}
	out := slices.Clone(inputs)
	var queue []string
	add := func(base, name string) {
		if name == "" || strings.Contains(name, "://") || path.IsAbs(name) {
			return
		}
		rel := path.Clean(path.Join(base, filepath.ToSlash(name)))
		if rel == ".." || strings.HasPrefix(rel, "../") || !tracked[rel] || seen[rel] || len(out) >= len(inputs)+maxIncludes {
			return
		}
		seen[rel] = true
		out = append(out, rel)
		queue = append(queue, rel)
	}
	for _, c := range commands {
		for _, name := range includeArgs(strings.Fields(c)) {
			add(".", name)
		}
	}
	for _, in := range inputs {
		if isRequirementsFile(in) {
			queue = append(queue, in)
		}
	}
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		for _, name := range fileIncludes(dir, rel) {
			add(path.Dir(rel), name)
		}
	}
	slices.Sort(out)
	return out
}

// isRequirementsFile reports whether rel looks like a pip requirements or constraints file.
func isRequirementsFile(rel string) bool {
	base := path.Base(rel)
	return strings.HasSuffix(base, ".txt") || strings.HasSuffix(base, ".in")
}

// fileIncludes are the files one requirements file includes; a file that is no regular file
// (a FIFO, a symlink), or lies below a symlinked folder, is not read.
func fileIncludes(dir, rel string) []string {
	e, err := openTracked(dir, rel)
	if err != nil || e.file == nil {
		return nil
	}
	defer e.file.Close()
	data, err := io.ReadAll(io.LimitReader(e.file, maxInputBytes))
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var line strings.Builder
	for sc.Scan() {
		text := sc.Text()
		if strings.HasSuffix(text, "\\") { // pip joins continued lines
			line.WriteString(strings.TrimSuffix(text, "\\"))
			continue
		}
		line.WriteString(text)
		joined := line.String()
		line.Reset()
		if i := strings.Index(joined, "#"); i == 0 || i > 0 && (joined[i-1] == ' ' || joined[i-1] == '\t') {
			joined = joined[:i]
		}
		out = append(out, includeArgs(strings.Fields(joined))...)
	}
	return out
}

// includeArgs returns the file arguments of -r/--requirement and -c/--constraint among
// words (a shell command's or a requirements line's), their quotes removed.
func includeArgs(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		for _, opt := range []string{"--requirement", "--constraint", "-r", "-c"} {
			var arg string
			switch {
			case w == opt && i+1 < len(words):
				i++
				arg = words[i]
			case strings.HasPrefix(w, opt+"=") && strings.HasPrefix(opt, "--"):
				arg = w[len(opt)+1:]
			case strings.HasPrefix(w, opt) && len(opt) == 2 && len(w) > 2 && w[2] != '-':
				arg = w[2:]
			default:
				continue
			}
			if arg = strings.Trim(arg, `"'`); arg != "" {
				out = append(out, arg)
			}
			break
		}
	}
	return out
}

// FindLinks are the local folders the recipe's commands hand pip with --find-links (-f),
// absolute paths only (a file:// URL as its path): the wheelhouse an offline recipe
// installs from, which the sandbox must show. A relative folder is the checkout's, a URL an
// index's, a path with a shell variable the recipe's own: none of them is returned.
func (r Recipe) FindLinks() []string {
	var out []string
	for _, c := range r.Commands {
		words := strings.Fields(c)
		for i := 0; i < len(words); i++ {
			w, arg := words[i], ""
			switch {
			case (w == "--find-links" || w == "-f") && i+1 < len(words):
				i++
				arg = words[i]
			case strings.HasPrefix(w, "--find-links="):
				arg = strings.TrimPrefix(w, "--find-links=")
			case strings.HasPrefix(w, "-f") && len(w) > 2 && w[2] != '-':
				arg = w[2:]
			default:
				continue
			}
			arg = strings.TrimPrefix(strings.Trim(arg, `"'`), "file://")
			if path.IsAbs(arg) && !strings.Contains(arg, "$") && !slices.Contains(out, path.Clean(arg)) {
				out = append(out, path.Clean(arg))
			}
		}
	}
	return out
}
