package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const gib3 = 3 << 30

// sparse makes a file of size bytes that takes no disk space: head, then a hole.
func sparse(t testing.TB, path, head string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(head); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %04d: %s\n", i, strings.Repeat("x", 40))
	}
	return b.String()
}

func TestReadHugeSparseFiles(t *testing.T) {
	dir := t.TempDir()
	sparse(t, filepath.Join(dir, "zeros.bin"), "", gib3)
	sparse(t, filepath.Join(dir, "huge.txt"), numbered(5000), gib3)
	w, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		req       ReadRequest
		want      string
		maxRead   int64
		maxResult int
	}{
		{"3 GiB of zeros", ReadRequest{Path: "zeros.bin"}, "binary file (3.0 GiB), not shown", sniffBytes, 200},
		{"3 GiB with a text head", ReadRequest{Path: "huge.txt"}, "(cut after line 1", 1 << 20, MaxResultBytes},
		{"range in the head", ReadRequest{Path: "huge.txt", StartLine: 4000, EndLine: 4002}, "line 4002:", 1 << 20, 400},
		{"range past the scan limit", ReadRequest{Path: "huge.txt", StartLine: 9_000_000}, "beyond the first 16.0 MiB", MaxScanBytes + 1<<20, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := w.BytesRead()
			got, err := w.ReadFiles(context.Background(), []ReadRequest{tt.req})
			read := w.BytesRead() - before
			t.Logf("%+v: read %d bytes, result %d bytes", tt.req, read, len(got))
			if err != nil || !strings.Contains(got, tt.want) {
				t.Errorf("ReadFiles(%+v)\n got: %.300q, %v\nwant: containing %q", tt.req, got, err, tt.want)
			}
			if read > tt.maxRead {
				t.Errorf("ReadFiles(%+v) read %d bytes, want at most %d", tt.req, read, tt.maxRead)
			}
			if len(got) > tt.maxResult {
				t.Errorf("ReadFiles(%+v) result is %d bytes, want at most %d", tt.req, len(got), tt.maxResult)
			}
		})
	}
	before := w.BytesRead()
	if got, err := w.Grep(context.Background(), "line 0001", ""); err != nil || !strings.Contains(got, "(not searched, larger than 2.0 MiB: huge.txt, zeros.bin)") {
		t.Errorf("grep over huge files = %q, %v; want them named as not searched", got, err)
	}
	if read := w.BytesRead() - before; read != 0 {
		t.Errorf("grep read %d bytes of files it does not search", read)
	}
	// A 3 GiB file was "read": it is too large to hash, so write_file refuses to overwrite it.
	if _, err := w.WriteFile(context.Background(), "huge.txt", "x"); err == nil || !strings.Contains(err.Error(), "too large to overwrite") {
		t.Errorf("overwrite huge file: err = %v", err)
	}
	if _, err := w.EditFile(context.Background(), "huge.txt", "line 0001", "x", false); err == nil || !strings.Contains(err.Error(), "edit_file handles files up to 16.0 MiB") {
		t.Errorf("edit huge file: err = %v", err)
	}
}

func TestReadFilesRangesAndCuts(t *testing.T) {
	dir := t.TempDir()
	big := numbered(3000) // 153 KB: more than one result
	files := map[string]string{"big.py": big, "small.py": "a = 1\nb = 2\nc = 3\n", "nonl.py": "x = 1", "empty.py": "",
		"long.txt": strings.Repeat("y", 100<<10) + "\nsecond\n", "bin.dat": "ab\x00cd"}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args string
		want []string
		not  []string
	}{
		{"plain strings still work", `{"paths":["small.py","nonl.py"]}`,
			[]string{"=== small.py (3 lines)\na = 1\nb = 2\nc = 3\n=== nonl.py (1 lines)\nx = 1\n(no newline at end of file)\n"}, nil},
		{"a big file is cut with a way on", `{"paths":["big.py"]}`,
			[]string{"=== big.py (lines 1-", " of 3000)\nline 0001:", `to read on, call read_files with {"path": "big.py", "start_line": `}, []string{"line 3000:"}},
		{"a range", `{"paths":[{"path":"big.py","start_line":1500,"end_line":1502}]}`,
			[]string{"=== big.py (lines 1500-1502 of 3000)\nline 1500: ", "line 1502: "}, []string{"line 1499:", "line 1503:"}},
		{"open-ended range to the end", `{"paths":[{"path":"big.py","start_line":2990}]}`,
			[]string{"=== big.py (lines 2990-3000 of 3000)", "line 3000:"}, []string{"cut after"}},
		{"only end_line", `{"paths":[{"path":"small.py","end_line":2}]}`,
			[]string{"=== small.py (lines 1-2 of 3)\na = 1\nb = 2\n"}, []string{"c = 3"}},
		{"mixed strings and objects", `{"paths":["small.py",{"path":"big.py","start_line":10,"end_line":10}]}`,
			[]string{"=== small.py (3 lines)", "=== big.py (lines 10-10 of 3000)\nline 0010"}, nil},
		{"start past the end", `{"paths":[{"path":"small.py","start_line":9}]}`,
			[]string{"=== small.py: error: start_line 9 is past the end: the file has 3 lines"}, nil},
		{"reversed range", `{"paths":[{"path":"small.py","start_line":3,"end_line":1}]}`,
			[]string{"error: start_line 3 is after end_line 1"}, nil},
		{"empty file", `{"paths":["empty.py"]}`, []string{"=== empty.py (0 lines, empty file)"}, nil},
		{"binary file", `{"paths":["bin.dat"]}`, []string{"=== bin.dat: binary file (5 bytes), not shown"}, nil},
		{"one line longer than the result", `{"paths":["long.txt"]}`, []string{"line 1 is longer than the 60.0 KiB result and was cut"}, []string{"second"}},
		{"the budget is shared", `{"paths":["big.py","small.py"]}`, []string{"not shown: small.py"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.Exec(context.Background(), ReadFiles, tt.args)
			if err != nil {
				t.Fatalf("Exec(%s): %v", tt.args, err)
			}
			if len(got) > MaxResultBytes+512 {
				t.Errorf("result is %d bytes, over the %d budget", len(got), MaxResultBytes)
			}
			for _, s := range tt.want {
				if !strings.Contains(got, s) {
					t.Errorf("Exec(%s)\n got: %.500q\nwant: containing %q", tt.args, got, s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(got, s) {
					t.Errorf("Exec(%s) contains %q", tt.args, s)
				}
			}
		})
	}
	// Following the cut message reads the whole file in order, nothing lost or repeated.
	var all strings.Builder
	start := 1
	for i := 0; i < 10; i++ {
		got, err := w.Exec(context.Background(), ReadFiles, fmt.Sprintf(`{"paths":[{"path":"big.py","start_line":%d}]}`, start))
		if err != nil {
			t.Fatal(err)
		}
		body := got[strings.Index(got, "\n")+1:]
		next := strings.Index(body, "(cut after line ")
		if next < 0 {
			all.WriteString(body)
			break
		}
		all.WriteString(body[:next])
		fmt.Sscanf(body[next:], "(cut after line %d", &start)
		start++
	}
	if all.String() != big {
		t.Errorf("reading on by the cut messages gave %d bytes, want the %d of the file", all.Len(), len(big))
	}
	for _, bad := range []string{`{"paths":[{"path":"small.py","from":1}]}`, `{"paths":[3]}`} {
		if _, err := w.Exec(context.Background(), ReadFiles, bad); err == nil || !strings.Contains(err.Error(), "neither a path string nor an object") {
			t.Errorf("Exec(%s) err = %v", bad, err)
		}
	}
}

func TestWriteFileGuard(t *testing.T) {
	ctx := context.Background()
	type step struct {
		do      func(w *Workspace, dir string) (string, error)
		wantErr string
	}
	read := func(p string) func(*Workspace, string) (string, error) {
		return func(w *Workspace, _ string) (string, error) { return w.ReadFiles(ctx, []ReadRequest{{Path: p}}) }
	}
	readRange := func(p string, a, b int) func(*Workspace, string) (string, error) {
		return func(w *Workspace, _ string) (string, error) {
			return w.ReadFiles(ctx, []ReadRequest{{Path: p, StartLine: a, EndLine: b}})
		}
	}
	write := func(p, s string) func(*Workspace, string) (string, error) {
		return func(w *Workspace, _ string) (string, error) { return w.WriteFile(ctx, p, s) }
	}
	edit := func(p, o, n string) func(*Workspace, string) (string, error) {
		return func(w *Workspace, _ string) (string, error) {
			r, err := w.EditFile(ctx, p, o, n, false)
			return r.Text, err
		}
	}
	outside := func(p, s string) func(*Workspace, string) (string, error) { // a change the model did not make
		return func(_ *Workspace, dir string) (string, error) {
			return "", os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644)
		}
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"never read", []step{{write("a.py", "x"), "was not read in this attempt"}}},
		{"read then write", []step{{read("a.py"), ""}, {write("a.py", "x"), ""}}},
		{"a range read counts", []step{{readRange("a.py", 2, 2), ""}, {write("a.py", "x"), ""}}},
		{"changed since the read", []step{{read("a.py"), ""}, {outside("a.py", "other\n"), ""}, {write("a.py", "x"), "changed since you last read it"}}},
		{"read again after the change", []step{{read("a.py"), ""}, {outside("a.py", "other\n"), ""}, {read("a.py"), ""}, {write("a.py", "x"), ""}}},
		{"edit counts as a fresh read", []step{{edit("a.py", "b = 2", "b = 3"), ""}, {write("a.py", "x"), ""}}},
		{"edit after a read keeps it fresh", []step{{read("a.py"), ""}, {edit("a.py", "b = 2", "b = 3"), ""}, {write("a.py", "x"), ""}}},
		{"own write counts", []step{{write("new.py", "1"), ""}, {write("new.py", "2"), ""}}},
		{"own write then outside change", []step{{write("new.py", "1"), ""}, {outside("new.py", "3"), ""}, {write("new.py", "2"), "changed since"}}},
		{"touched back to the same content is fine", []step{{read("a.py"), ""}, {outside("a.py", "a = 1\nb = 2\n"), ""}, {write("a.py", "x"), ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.py"), []byte("a = 1\nb = 2\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			w, err := NewWorkspace(dir)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				_, err := s.do(w, dir)
				switch {
				case s.wantErr == "" && err != nil:
					t.Fatalf("step %d: %v", i, err)
				case s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)):
					t.Fatalf("step %d: err = %v, want %q", i, err, s.wantErr)
				}
			}
		})
	}
	// An overwrite keeps the file's mode.
	dir := t.TempDir()
	p := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, _ := NewWorkspace(dir)
	if _, err := w.ReadFiles(ctx, []ReadRequest{{Path: "run.sh"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteFile(ctx, "run.sh", "#!/bin/sh\necho hi\n"); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(p); info.Mode().Perm() != 0o755 {
		t.Errorf("mode after overwrite = %v, want 0755", info.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*ticketd-*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// BenchmarkReadSparse3GiB measures read_files on a 3 GiB sparse file with a text head, and
// reports the bytes read per call and the peak RSS growth (VmHWM after clear_refs).
func BenchmarkReadSparse3GiB(b *testing.B) {
	dir := b.TempDir()
	sparse(b, filepath.Join(dir, "huge.txt"), numbered(5000), gib3)
	sparse(b, filepath.Join(dir, "zeros.bin"), "", gib3)
	w, err := NewWorkspace(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"huge.txt", "zeros.bin"} {
		b.Run(name, func(b *testing.B) {
			resetPeakRSS()
			base := peakRSS()
			before := w.BytesRead()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.ReadFiles(context.Background(), []ReadRequest{{Path: name}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.BytesRead()-before)/float64(b.N), "bytes_read/op")
			if base > 0 {
				b.ReportMetric(float64(peakRSS()-base)/(1<<20), "peak_rss_growth_MiB")
			}
		})
	}
}

// resetPeakRSS resets the kernel's peak RSS mark for this process (Linux 4.0+).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is VmHWM in bytes, 0 where /proc is not there.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(l, "VmHWM: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	return 0
}

// TestGrepReadsBoundedTotal: every file of a repository of many megabyte-sized files (data,
// fixtures, bundles) is under MaxGrepFileBytes, so a grep that matches little read them all,
// every call. One grep reads at most MaxGrepScanBytes and says where it stopped; the matches
// found before are kept.
func TestGrepReadsBoundedTotal(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.py"), []byte("needle = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := int(MaxGrepScanBytes/MaxGrepFileBytes) + 8
	for i := range files {
		sparse(t, filepath.Join(dir, fmt.Sprintf("data%03d.bin", i)), "", MaxGrepFileBytes)
	}
	w, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.Grep(context.Background(), "needle", "")
	if err != nil || !strings.Contains(got, "a.py:1: needle = 1") || !strings.Contains(got, "(stopped after searching 256.0 MiB of files") {
		t.Errorf("grep over %d files of %s = %q, %v; want the match and a note that it stopped", files, humanBytes(MaxGrepFileBytes), got, err)
	}
	if read := w.BytesRead(); read > MaxGrepScanBytes {
		t.Errorf("grep read %s, want at most %s", humanBytes(read), humanBytes(MaxGrepScanBytes))
	}
}
