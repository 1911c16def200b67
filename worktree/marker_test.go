package worktree

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// markerArg makes the test binary act as the long-running filter process a
// repository config names: it logs its name and hands blobs back unchanged.
// The other markers are shell scripts (see writeMarkers).
const markerArg = "ticketd-test-marker"

func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == markerArg {
		os.Exit(runProcessMarker(os.Args[2], os.Args[3]))
	}
	os.Exit(m.Run())
}

func runProcessMarker(logPath, name string) int {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintln(f, name)
	f.Close()
	if err := processFilter(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "process filter:", err)
		return 1
	}
	return 0
}

// processFilter is a long-running filter (gitattributes(5), "Long Running
// Filter Process") that hands every blob back unchanged.
func processFilter(in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	w := bufio.NewWriter(out)
	if _, err := readPktList(r); err != nil { // git-filter-client, version=2
		return err
	}
	writePkts(w, "git-filter-server\n", "version=2\n")
	if err := w.Flush(); err != nil {
		return err
	}
	if _, err := readPktList(r); err != nil { // capabilities
		return err
	}
	writePkts(w, "capability=clean\n", "capability=smudge\n")
	if err := w.Flush(); err != nil {
		return err
	}
	for {
		if _, err := readPktList(r); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		content, err := readPktList(r)
		if err != nil {
			return err
		}
		writePkts(w, "status=success\n")
		writePkts(w, content...)
		writePkts(w) // keep the status
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// readPktList reads pkt-lines up to a flush packet.
func readPktList(r *bufio.Reader) ([]string, error) {
	var pkts []string
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, err
		}
		n, err := strconv.ParseUint(string(hdr[:]), 16, 16)
		if err != nil {
			return nil, fmt.Errorf("bad pkt-line length %q", hdr)
		}
		if n == 0 {
			return pkts, nil
		}
		buf := make([]byte, n-4)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		pkts = append(pkts, string(buf))
	}
}

// writePkts writes pkts as pkt-lines followed by a flush packet.
func writePkts(w io.Writer, pkts ...string) {
	for _, p := range pkts {
		fmt.Fprintf(w, "%04x%s", len(p)+4, p)
	}
	io.WriteString(w, "0000")
}

// markerNames are the commands writeMarkers configures, each of which the
// negative control makes plain git run.
var markerNames = []string{
	"fsmonitor", "clean", "smudge", "process", "clean-included", "external", "diffcommand", "textconv", "gpg",
	"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout", "reference-transaction", "post-index-change",
}

// writeMarkers writes, for every name in markerNames, an executable
// dir/bin/<name> that appends its name to log and then does that command's
// job well enough for git to carry on (a filter copies, gpg "signs").
func writeMarkers(t testing.TB, dir, log string) map[string]string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	paths := map[string]string{}
	for _, name := range markerNames {
		body := ""
		switch {
		case name == "process":
			body = fmt.Sprintf("exec %s %s %s %s\n", shQuote(exe), markerArg, shQuote(log), name)
		case strings.HasPrefix(name, "clean"), strings.HasPrefix(name, "smudge"):
			body = "exec cat\n"
		case name == "textconv":
			body = "exec cat \"$1\"\n"
		case name == "gpg":
			body = "cat >/dev/null\nprintf '\\n[GNUPG:] SIG_CREATED D 1 8 00 0 0\\n' >&2\n" +
				"printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nfake\\n-----END PGP SIGNATURE-----\\n'\n"
		case name == "reference-transaction":
			body = "cat >/dev/null\n"
		}
		if name != "process" {
			body = "echo " + name + " >> " + shQuote(log) + "\n" + body
		}
		p := filepath.Join(bin, name)
		writeFile(t, p, "#!/bin/sh\n"+body)
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	return paths
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// readMarks returns the names logged so far and empties the log.
func readMarks(t testing.TB, log string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	_ = os.Remove(log)
	marks := map[string]bool{}
	for _, l := range strings.Fields(string(data)) {
		marks[l] = true
	}
	return marks
}
