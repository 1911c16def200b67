package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestDescendantsFromChildrenLists: the watch's tree, read from the processes' children
// lists, is the tree every process's parent in /proc gives: a child of the main thread, a
// grandchild, and a child made by a second thread (listed under that thread, not the
// process), none missed and none of the machine's other processes taken in.
func TestDescendantsFromChildrenLists(t *testing.T) {
	if !haveChildrenLists() {
		t.Skip("this kernel keeps no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3 (apt-get install python3)")
	}
	// The script says "up" once its three descendants run, then waits for its stdin to close.
	cmd := exec.Command("/usr/bin/python3", "-c", `
import subprocess, sys, threading
a = subprocess.Popen(["/bin/sh", "-c", "sleep 600 & wait"])
made = threading.Event()
def second():
    subprocess.Popen(["sleep", "600"])
    made.set()
    sys.stdin.read()
threading.Thread(target=second, daemon=True).start()
made.wait()
print("up", flush=True)
sys.stdin.read()
`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range descendantsByScan(cmd.Process.Pid)[1:] {
			if proc, err := os.FindProcess(p); err == nil {
				proc.Kill()
			}
		}
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "up\n" {
		t.Fatalf("the script said %q, want up", line)
	}
	// sh's sleep may still be starting: the scan is read until it shows all four below the
	// script (the script, sh, sh's sleep, the thread's sleep), then both ways are compared.
	var want []int
	for len(want) < 4 {
		want = descendantsByScan(cmd.Process.Pid)
	}
	got := Descendants(cmd.Process.Pid)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Descendants from the children lists = %v, from every process's parent %v", got, want)
	}
}

// BenchmarkDescendants is one look of the watch at a tree of one process (this test's),
// from the children lists and from every process in /proc, on this machine as it is.
func BenchmarkDescendants(b *testing.B) {
	for _, bm := range []struct {
		name string
		f    func(int) []int
	}{{"children-lists", Descendants}, {"proc-scan", descendantsByScan}} {
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				bm.f(os.Getpid())
			}
		})
	}
}
