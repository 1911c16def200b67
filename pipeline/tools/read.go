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

func (w *Workspace) readOne(ctx context.Context, b *strings.Builder, r ReadRequest, budget int) error {
	switch {
	case r.StartLine < 0 || r.EndLine < 0:
		return fmt.Errorf("start_line and end_line count from 1 (got %d and %d)", r.StartLine, r.EndLine)
	case r.EndLine > 0 && r.StartLine > r.EndLine:
		return fmt.Errorf("start_line %d is after end_line %d", r.StartLine, r.EndLine)
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
	head := make([]byte, min(size, sniffBytes))
	n, err := io.ReadFull(counted, head)
	head = head[:n]
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read: %w", err)
	}
	if bytes.IndexByte(head, 0) >= 0 {
		fmt.Fprintf(b, "=== %s: binary file (%s), not shown\n", t.rel, humanBytes(size))
		return nil
	}
	whole := size <= MaxScanBytes // scanned to the end: line count and hash are exact
	var sum hash.Hash
	if whole {
		sum = sha256.New()
		sum.Write(head)
	}
	src := io.MultiReader(bytes.NewReader(head), counted)
	if whole {
		src = io.MultiReader(bytes.NewReader(head), io.TeeReader(counted, sum))
	}
	br := bufio.NewReaderSize(src, 64<<10)

	start, end := max(r.StartLine, 1), r.EndLine
	var body strings.Builder
	room := budget - 200 - len(t.rel) // header and footer
	line, first, last := 0, 0, 0      // last line number seen, first and last shown
	cut, cutInLine := false, false
	scanned := int64(0)
	atEOF := false
	for {
		if line%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if !whole && (cut || (end > 0 && line >= end)) {
			break // nothing more to show, and the rest cannot be counted anyway
		}
		var text []byte
		var long int64
		if !whole && scanned > MaxScanBytes {
			err = errScanLimit
		} else {
			text, long, err = readLine(br)
		}
		if errors.Is(err, errScanLimit) {
			if first == 0 {
				return fmt.Errorf("start_line %d is beyond the first %s of this %s file, which is as far as read_files reads; use grep to find the lines you need", start, humanBytes(MaxScanBytes), humanBytes(size))
			}
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read: %w", err)
		}
		if len(text) == 0 && errors.Is(err, io.EOF) {
			atEOF = true
			break
		}
		scanned += int64(len(text)) + long
		line++
		show := line >= start && (end == 0 || line <= end) && !cut
		if show {
			switch {
			case len(text) <= room-body.Len() && long == 0:
				if first == 0 {
					first = line
				}
				last = line
				body.Write(text)
			case first == 0:
				// A single line bigger than the whole budget: show its start.
				keep := validUTF8Prefix(text, max(room-body.Len(), 0))
				first, last = line, line
				body.Write(keep)
				body.WriteByte('\n')
				cut, cutInLine = true, true
			default:
				cut = true
			}
		}
		if errors.Is(err, io.EOF) {
			atEOF = true
			break
		}
	}
	total := line
	if whole && atEOF {
		st := readState{hash: hex.EncodeToString(sum.Sum(nil)), size: size}
		w.markRead(t.abs, st)
	} else {
		w.markRead(t.abs, readState{size: size})
	}
	if first == 0 {
		if total == 0 {
			fmt.Fprintf(b, "=== %s (0 lines, empty file)\n", t.rel)
			return nil
		}
		return fmt.Errorf("start_line %d is past the end: the file has %d lines", start, total)
	}
	of := fmt.Sprintf(" of %d", total)
	if !whole {
		of = fmt.Sprintf(" of a %s file", humanBytes(size))
	}
	partial := first != 1 || cut || (end > 0 && last < total) || !whole
	if partial {
		fmt.Fprintf(b, "=== %s (lines %d-%d%s)\n", t.rel, first, last, of)
	} else {
		fmt.Fprintf(b, "=== %s (%d lines)\n", t.rel, total)
	}
	b.WriteString(body.String())
	if body.Len() > 0 && !strings.HasSuffix(body.String(), "\n") {
		b.WriteString("\n(no newline at end of file)\n")
	}
	switch {
	case cutInLine:
		fmt.Fprintf(b, "(line %d is longer than the %s result and was cut; grep shows parts of long lines)\n", last, humanBytes(MaxResultBytes))
	case cut:
		fmt.Fprintf(b, "(cut after line %d%s to fit the %s result; to read on, call read_files with {\"path\": %q, \"start_line\": %d})\n", last, of, humanBytes(MaxResultBytes), t.rel, last+1)
	case !whole && (end == 0 || last < end):
		fmt.Fprintf(b, "(stopped after line %d; to read on, call read_files with {\"path\": %q, \"start_line\": %d})\n", last, t.rel, last+1)
	}
	return nil
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
