package pipeline

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
//
// Files are read through root as an os.Root and must be regular files there: a committed
// symlink (to /etc, to another checkout, to a FIFO) is listed but never followed, so nothing
// outside the worktree reaches the requests.
func RepoMap(root string, files []string) string {
	var b strings.Builder
	r, err := os.OpenRoot(root)
	if err == nil {
		defer r.Close()
	}
	for i, f := range files {
		line := f
		if strings.HasSuffix(f, ".py") && r != nil {
			if outline := pythonOutline(r, filepath.FromSlash(f)); outline != "" {
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

// pythonOutline lists top-level and class-level def/class lines, indented by two spaces, of
// rel under root when it is a regular file (not a symlink) of at most maxOutlineFileSize.
func pythonOutline(root *os.Root, rel string) string {
	info, err := root.Lstat(rel)
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxOutlineFileSize {
		return ""
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, info) {
		return "" // swapped since the Lstat
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20) // grows for a long line; most files need 4 KiB
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
