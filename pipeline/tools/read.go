package tools

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"
)

// ReadRequest is one file of a read_files call: a path and an optional 1-based, inclusive
// line range (0 means from the start / to the end).
type ReadRequest struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line,omitempty"`
	EndLine   int    `json:"end_line,omitempty"`
}

var errScanLimit = errors.New("scan limit reached")

// sniffBytes is how much of a file's head decides whether it is binary (a NUL byte in it).
const sniffBytes = 8 << 10

// ReadFiles returns each file's content (or the requested lines) under a header line. The
// files share one result budget of MaxResultBytes; a file that does not fit whole is cut at
// a line boundary, and the result says which start_line reads on. A file that cannot be read
// is reported in place and does not fail the others.
func (w *Workspace) ReadFiles(ctx context.Context, reqs []ReadRequest) (string, error) {
	if len(reqs) == 0 {
		return "", errors.New("read_files needs at least one path")
	}
	var b strings.Builder
	budget := MaxResultBytes
	for i, r := range reqs {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if budget <= 2048 {
			left := make([]string, 0, len(reqs)-i)
			for _, r := range reqs[i:] {
				left = append(left, r.Path)
			}
			fmt.Fprintf(&b, "(result full at %s: not shown: %s; read them in another call)\n", humanBytes(MaxResultBytes), strings.Join(left, ", "))
			break
		}
		before := b.Len()
		if err := w.readOne(ctx, &b, r, budget); err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			fmt.Fprintf(&b, "=== %s: error: %v\n", r.Path, err)
		}
		budget -= b.Len() - before
	}
	return b.String(), nil
}

// readOne appends one file's result to b, spending at most budget bytes of it. The steps:
// check the range, open the file safely, refuse binaries, scan the lines, then write.
func (w *Workspace) readOne(ctx context.Context, b *strings.Builder, r ReadRequest, budget int) error {
	if err := checkLineRange(r); err != nil {
		return err
	}
	t, err := w.resolve(r.Path)
	if err != nil {
		return err
	}
	f, info, err := w.openRegular(t)
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("no such file (list_files or grep can find the right path)")
	}
	if err != nil {
		return err
	}
	defer f.Close()
	size := info.Size()
	counted := &countingReader{r: f, n: &w.bytesRead}
	head, err := sniffHead(counted, size)
	if err != nil {
		return err
	}
	if bytes.IndexByte(head, 0) >= 0 {
		fmt.Fprintf(b, "=== %s: binary file (%s), not shown\n", t.rel, humanBytes(size))
		return nil
	}
	s := &lineScan{
		start: max(r.StartLine, 1), end: r.EndLine,
		room: budget - 200 - len(t.rel), // header and footer
		size: size, whole: size <= MaxScanBytes,
	}
	var sum hash.Hash
	src := io.MultiReader(bytes.NewReader(head), counted)
	if s.whole {
		// Only a file scanned to its end gets a hash: edits compare it to spot changes.
		sum = sha256.New()
		sum.Write(head)
		src = io.MultiReader(bytes.NewReader(head), io.TeeReader(counted, sum))
	}
	if err := s.run(ctx, bufio.NewReaderSize(src, 64<<10)); err != nil {
		return err
	}
	if s.whole && s.atEOF {
		w.markRead(t.abs, readState{hash: hex.EncodeToString(sum.Sum(nil)), size: size})
	} else {
		w.markRead(t.abs, readState{size: size})
	}
	return s.write(b, t.rel)
}

// checkLineRange rejects ranges the model got wrong before any file is touched.
func checkLineRange(r ReadRequest) error {
	switch {
	case r.StartLine < 0 || r.EndLine < 0:
		return fmt.Errorf("start_line and end_line count from 1 (got %d and %d)", r.StartLine, r.EndLine)
	case r.EndLine > 0 && r.StartLine > r.EndLine:
		return fmt.Errorf("start_line %d is after end_line %d", r.StartLine, r.EndLine)
	}
	return nil
}

// sniffHead reads the first sniffBytes of a file (fewer if it is shorter): enough to tell
// a binary file by its NUL bytes before anything is shown.
func sniffHead(r io.Reader, size int64) ([]byte, error) {
	head := make([]byte, min(size, sniffBytes))
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read: %w", err)
	}
	return head[:n], nil
}

// lineScan walks a file line by line, keeping the requested lines that fit the budget.
type lineScan struct {
	start, end int   // requested lines, 1-based and inclusive; end 0 means to the end
	room       int   // bytes the shown lines may take
	size       int64 // file size from stat
	whole      bool  // size <= MaxScanBytes: scanned to the end, line count and hash exact

	body           strings.Builder
	line           int // last line number seen
	first, last    int // first and last line shown; 0 while none is
	cut, cutInLine bool
	scanned        int64
	atEOF          bool
}

// run scans until the end of the file, the scan limit, or (for a file too big to count)
// the last line it could show.
func (s *lineScan) run(ctx context.Context, br *bufio.Reader) error {
	for {
		if s.line%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if !s.whole && (s.cut || (s.end > 0 && s.line >= s.end)) {
			return nil // nothing more to show, and the rest cannot be counted anyway
		}
		text, long, err := s.next(br)
		if errors.Is(err, errScanLimit) {
			if s.first == 0 {
				return fmt.Errorf("start_line %d is beyond the first %s of this %s file, which is as far as read_files reads; use grep to find the lines you need", s.start, humanBytes(MaxScanBytes), humanBytes(s.size))
			}
			return nil
		}
		eof := errors.Is(err, io.EOF)
		if err != nil && !eof {
			return fmt.Errorf("read: %w", err)
		}
		if len(text) > 0 || !eof {
			s.take(text, long)
		}
		if eof {
			s.atEOF = true
			return nil
		}
	}
}

// next reads one line, or reports errScanLimit once a big file has been read as far as allowed.
func (s *lineScan) next(br *bufio.Reader) ([]byte, int64, error) {
	if !s.whole && s.scanned > MaxScanBytes {
		return nil, 0, errScanLimit
	}
	return readLine(br)
}

// take counts one line and shows it if it is in the range and fits; a single line bigger
// than the whole budget is shown cut, so the model sees at least its start.
func (s *lineScan) take(text []byte, long int64) {
	s.scanned += int64(len(text)) + long
	s.line++
	if s.cut || s.line < s.start || (s.end > 0 && s.line > s.end) {
		return
	}
	switch {
	case len(text) <= s.room-s.body.Len() && long == 0:
		if s.first == 0 {
			s.first = s.line
		}
		s.last = s.line
		s.body.Write(text)
	case s.first == 0:
		keep := validUTF8Prefix(text, max(s.room-s.body.Len(), 0))
		s.first, s.last = s.line, s.line
		s.body.Write(keep)
		s.body.WriteByte('\n')
		s.cut, s.cutInLine = true, true
	default:
		s.cut = true
	}
}

// write appends the header, the shown lines and a footer that says how to read on.
func (s *lineScan) write(b *strings.Builder, rel string) error {
	total := s.line
	if s.first == 0 {
		if total == 0 {
			fmt.Fprintf(b, "=== %s (0 lines, empty file)\n", rel)
			return nil
		}
		return fmt.Errorf("start_line %d is past the end: the file has %d lines", s.start, total)
	}
	of := fmt.Sprintf(" of %d", total)
	if !s.whole {
		of = fmt.Sprintf(" of a %s file", humanBytes(s.size))
	}
	partial := s.first != 1 || s.cut || (s.end > 0 && s.last < total) || !s.whole
	if partial {
		fmt.Fprintf(b, "=== %s (lines %d-%d%s)\n", rel, s.first, s.last, of)
	} else {
		fmt.Fprintf(b, "=== %s (%d lines)\n", rel, total)
	}
	body := s.body.String()
	b.WriteString(body)
	if len(body) > 0 && !strings.HasSuffix(body, "\n") {
		b.WriteString("\n(no newline at end of file)\n")
	}
	s.writeFooter(b, rel, of)
	return nil
}

// writeFooter says why the shown lines stop where they do and how to read on.
func (s *lineScan) writeFooter(b *strings.Builder, rel, of string) {
	switch {
	case s.cutInLine:
		fmt.Fprintf(b, "(line %d is longer than the %s result and was cut; grep shows parts of long lines)\n", s.last, humanBytes(MaxResultBytes))
	case s.cut:
		fmt.Fprintf(b, "(cut after line %d%s to fit the %s result; to read on, call read_files with {\"path\": %q, \"start_line\": %d})\n", s.last, of, humanBytes(MaxResultBytes), rel, s.last+1)
	case !s.whole && (s.end == 0 || s.last < s.end):
		fmt.Fprintf(b, "(stopped after line %d; to read on, call read_files with {\"path\": %q, \"start_line\": %d})\n", s.last, rel, s.last+1)
	}
}

// readLine returns the next line with its newline, keeping at most 64 KiB of it in memory;
// long is how many further bytes of the same line were skipped. A line longer than
// MaxScanBytes stops the scan (errScanLimit).
func readLine(br *bufio.Reader) (text []byte, long int64, err error) {
	chunk, err := br.ReadSlice('\n')
	text = append([]byte(nil), chunk...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if long > MaxScanBytes {
			return text, long, errScanLimit
		}
		chunk, err = br.ReadSlice('\n')
		long += int64(len(chunk))
	}
	return text, long, err
}

func validUTF8Prefix(b []byte, n int) []byte {
	if n >= len(b) {
		return bytes.TrimRight(b, "\n")
	}
	b = b[:n]
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return b
}

// countingReader adds every byte read to n.
type countingReader struct {
	r io.Reader
	n interface{ Add(int64) int64 }
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
