package pipeline

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Repository map limits: enough for the models to find their way in a mid-size repository
// without listing it, small enough to stay a minor share of a request even uncached.
const (
	MaxRepoMapBytes    = 48 << 10
	maxOutlineFileSize = 256 << 10
	maxOutlineLines    = 60
)

// RepoMap renders a repository's file list with an outline of each Python file's classes
// and functions. It is computed once per repository and base commit and sent to every role
// right after the static prefix: shared by all tickets of the repository, it is cached with
// the prefix, and it saves the maker the list_files and exploratory reads it would
// otherwise spend steps on.
func RepoMap(root string, files []string) string {
	var b strings.Builder
	for i, f := range files {
		line := f
		if strings.HasSuffix(f, ".py") {
			if outline := pythonOutline(filepath.Join(root, filepath.FromSlash(f))); outline != "" {
				line += "\n" + outline
			}
		}
		if b.Len()+len(line)+1 > MaxRepoMapBytes {
			fmt.Fprintf(&b, "(and %d more files: use list_files)\n", len(files)-i)
			break
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// pythonOutline lists top-level and class-level def/class lines, indented by two spaces.
func pythonOutline(path string) string {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxOutlineFileSize {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		trimmed := strings.TrimLeft(line, " \t")
		indent := len(line) - len(trimmed)
		if indent > 4 {
			continue
		}
		if strings.HasPrefix(trimmed, "def ") || strings.HasPrefix(trimmed, "async def ") || strings.HasPrefix(trimmed, "class ") {
			sig := strings.TrimSuffix(trimmed, ":")
			if len(sig) > 160 {
				sig = sig[:160] + "…"
			}
			out = append(out, "  "+strings.Repeat(" ", indent/2)+sig)
			if len(out) >= maxOutlineLines {
				out = append(out, "  …")
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
