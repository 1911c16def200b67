package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
)

// writable resolves a path for writing: no symlink on the way (the model must name the real
// file, so a committed symlink cannot redirect a write), and an existing entry must be a
// regular file.
func (w *Workspace) writable(p string) (target, error) {
	t, err := w.resolve(p)
	if err != nil {
		return t, err
	}
	if err := checkGitLookalike(t.rel); err != nil {
		return t, err
	}
	if t.link != "" {
		real := t.rel
		return t, fmt.Errorf("%s goes through the symlink %s -> %s; the tools do not write through symlinks: write to the real path %s instead", p, t.link, t.linkTo, real)
	}
	if t.exists() && !t.info.Mode().IsRegular() {
		return t, notRegular(p, t.info.Mode())
	}
	if err := w.protect(p, t.rel); err != nil {
		return t, err
	}
	return t, nil
}

// WriteFile creates a file, or overwrites one the model read in this attempt and that has not
// changed since (by content hash): overwriting a file the model has not seen as it is would
// silently drop someone's change.
func (w *Workspace) WriteFile(ctx context.Context, path, content string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if len(content) > MaxEditBytes {
		return "", fmt.Errorf("content is %s; write_file writes files up to %s", humanBytes(int64(len(content))), humanBytes(MaxEditBytes))
	}
	t, err := w.writable(path)
	if err != nil {
		return "", err
	}
	perm := fs.FileMode(0o644)
	verb := "created"
	if t.exists() {
		st, ok := w.lastRead(t.abs)
		if !ok {
			return "", fmt.Errorf("%s exists and was not read in this attempt: call read_files on it first, or use edit_file for a small change", path)
		}
		if st.hash == "" {
			return "", fmt.Errorf("%s (%s) is too large to overwrite with write_file; use edit_file", path, humanBytes(st.size))
		}
		data, info, err := w.readWhole(t, MaxEditBytes, "write_file")
		if err != nil {
			return "", err
		}
		if hashOf(data) != st.hash {
			return "", fmt.Errorf("%s changed since you last read it (by another tool call or the checks): call read_files on it again before overwriting it, so no change is lost", path)
		}
		perm, verb = info.Mode().Perm(), "overwrote"
	}
	if err := w.writeAtomic(t, []byte(content), perm); err != nil {
		return "", err
	}
	w.markRead(t.abs, readState{hash: hashOf([]byte(content)), size: int64(len(content))})
	return fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, t.rel, len(content), lineCount([]byte(content))), nil
}

// Rewrite replaces a file the tools wrote in this attempt with data, keeping its mode, and
// records it as the tools' last write and the maker's last read of it. The daemon puts the
// maker's files in the form a checkout of their commit gives (line endings, encoding) before
// the checks, so that the checks, the maker's next read and the branch agree.
func (w *Workspace) Rewrite(rel string, data []byte) error {
	w.mu.Lock()
	prev, ok := w.written[rel]
	w.mu.Unlock()
	if !ok {
		return fmt.Errorf("rewrite %s: the tools did not write it in this attempt", rel)
	}
	t, err := w.writable(rel)
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", rel, err)
	}
	if err := w.writeAtomic(t, data, prev.Mode); err != nil {
		return err
	}
	w.markRead(t.abs, readState{hash: hashOf(data), size: int64(len(data))})
	w.mu.Lock()
	if w.rewritten == nil {
		w.rewritten = map[string]bool{}
	}
	w.rewritten[rel] = true
	w.mu.Unlock()
	return nil
}

// TakeRewritten returns the paths Rewrite changed since the last call, sorted, and forgets
// them: the maker is told once that the file it wrote now holds another form.
func (w *Workspace) TakeRewritten() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Sorted(maps.Keys(w.rewritten))
	w.rewritten = nil
	return out
}

// EditResult is what edit_file did: the text for the model and the ladder rung that matched,
// for the tool-call record.
type EditResult struct {
	Text    string
	Rung    Rung
	Matches int // regions replaced (more than one only with replace_all)
}

// EditFile replaces old_text with new_text, matching old_text with the ladder in match.go.
// A miss or an ambiguous match changes nothing and says what to send instead. The edit
// counts as a fresh read of the new content, so write_file may overwrite it afterwards.
func (w *Workspace) EditFile(ctx context.Context, path, oldText, newText string, replaceAll bool) (EditResult, error) {
	if err := ctx.Err(); err != nil {
		return EditResult{}, err
	}
	t, err := w.writable(path)
	if err != nil {
		return EditResult{}, err
	}
	if !t.exists() {
		return EditResult{}, fmt.Errorf("%s does not exist: use write_file to create it (list_files shows the existing paths)", path)
	}
	data, info, err := w.readWhole(t, MaxEditBytes, "edit_file")
	if err != nil {
		return EditResult{}, err
	}
	content := string(data)
	e, err := matchEdit(content, oldText, newText, replaceAll, t.rel)
	if err != nil {
		var miss *missError
		if errors.As(err, &miss) {
			return EditResult{}, miss
		}
		return EditResult{}, err
	}
	updated := e.apply(content)
	if err := ctx.Err(); err != nil {
		return EditResult{}, err
	}
	if err := w.writeAtomic(t, []byte(updated), info.Mode().Perm()); err != nil {
		return EditResult{}, err
	}
	w.markRead(t.abs, readState{hash: hashOf([]byte(updated)), size: int64(len(updated))})
	return EditResult{Text: describeEdit(t.rel, content, e), Rung: e.rung, Matches: len(e.regions)}, nil
}

// describeEdit says where the edit landed; after a tolerant match it also shows the lines as
// written, so the model can check the re-indentation without reading the file again.
func describeEdit(rel, content string, e edit) string {
	fl := splitFile(content)
	first := e.regions[0]
	line := fl.lineOf(first.start)
	removed := strings.Count(content[first.start:first.end], "\n") + 1
	added := strings.Count(first.text, "\n") + 1
	var b strings.Builder
	if len(e.regions) == 1 {
		fmt.Fprintf(&b, "edited %s at line %d (-%d +%d lines)", rel, line, removed, added)
	} else {
		lines := make([]int, len(e.regions))
		for i, r := range e.regions {
			lines[i] = fl.lineOf(r.start)
		}
		fmt.Fprintf(&b, "edited %s in %d places (replace_all), at lines %s", rel, len(e.regions), joinInts(lines, 10))
	}
	if e.rung == RungExact {
		return b.String()
	}
	fmt.Fprintf(&b, "; old_text did not match exactly: %s. Lines %d-%d now read:\n", rungHow(e.rung), line, line+max(strings.Count(strings.TrimSuffix(first.text, "\n"), "\n"), 0))
	shown := strings.Split(strings.TrimSuffix(lf(first.text), "\n"), "\n")
	if len(shown) > 30 {
		shown = append(shown[:30:30], "...")
	}
	b.WriteString(strings.Join(shown, "\n"))
	return b.String()
}

func lineCount(data []byte) int {
	n := strings.Count(string(data), "\n")
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}
