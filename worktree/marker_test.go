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

// markerArg makes the test binary act as a command a repository config names
// (a hook, a filter, an external diff, gpg): it appends its name to a log, so
// a test can tell whether git ran it, then does that command's job well
// enough for git to carry on. See writeMarkers.
const markerArg = "ticketd-test-marker"

func TestMain(m *testing.M) {
	if len(os.Args) > 3 && os.Args[1] == markerArg {
		os.Exit(runMarker(os.Args[2], os.Args[3], os.Args[4:]))
	}
	os.Exit(m.Run())
}

func runMarker(logPath, name string, args []string) int {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintln(f, name)
	f.Close()
	switch {
	case name == "process":
		if err := processFilter(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "process filter:", err)
			return 1
		}
	case strings.HasPrefix(name, "clean"), strings.HasPrefix(name, "smudge"):
		_, _ = io.Copy(os.Stdout, os.Stdin)
	case name == "textconv" && len(args) > 0:
		data, _ := os.ReadFile(args[0])
		os.Stdout.Write(data)
	case name == "gpg":
		_, _ = io.Copy(io.Discard, os.Stdin)
		fmt.Fprint(os.Stderr, "\n[GNUPG:] SIG_CREATED D 1 8 00 0 0\n")
		fmt.Print("-----BEGIN PGP SIGNATURE-----\n\nfake\n-----END PGP SIGNATURE-----\n")
	case name == "reference-transaction":
		_, _ = io.Copy(io.Discard, os.Stdin)
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

// writeMarkers writes, for every name in markerNames, an executable script
// dir/bin/<name> that runs the test binary as that marker, logging to log.
func writeMarkers(t testing.TB, dir, log string) map[string]string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	paths := map[string]string{}
	for _, name := range markerNames {
		p := filepath.Join(bin, name)
		writeFile(t, p, fmt.Sprintf("#!/bin/sh\nexec %s %s %s %s \"$@\"\n", shQuote(exe), markerArg, shQuote(log), name))
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
