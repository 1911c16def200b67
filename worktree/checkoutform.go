package worktree

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// CheckoutForms returns, by path, the changes whose bytes a checkout of their commit would
// not write back as they are, with the bytes it would write. The repository's rules for
// line endings and encodings (the text, eol and working-tree-encoding attributes,
// core.autocrlf, core.eol) apply when a file is committed and again when it is checked
// out: a file written with CRLF under `* text` is stored, published and checked out with
// LF. The checks must see what the branch holds, not what the tools wrote, or a test that
// reads its data in binary mode passes on bytes no one will ever check out. Each change is
// stored as buildTree stores it and read back through the same rules (no filter driver
// runs: the repository's are switched off). A change the working copy does not hold as
// given is left out: another version is in place for a while (the base's, for a run of the
// base's test configuration), and rewriting the file would undo that view.
//
// Each answer costs two git processes per file, and an attempt asks before every run of
// checks (a gate runs them several times) with the same files: answers are kept on the tree
// (formMemo), keyed on the path, the bytes and every input of the rules that the working
// copy and the git directory hold, so a change to any of them (the maker writing a
// .gitattributes, a check editing the config) asks git again.
func (t *Tree) CheckoutForms(ctx context.Context, changes []Change) (map[string][]byte, error) {
	g := t.dirs()
	out := map[string][]byte{}
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return nil, fmt.Errorf("open worktree %s: %w", t.Dir, err)
	}
	defer root.Close()
	for _, c := range changes {
		if err := validChange(c); err != nil {
			return nil, err
		}
		if !sameContent(root, c.Path, c.Data) {
			continue
		}
		key, keyed := t.formKey(root, c)
		if keyed {
			if form, ok := t.forms.get(key); ok {
				if form != nil {
					out[c.Path] = form
				}
				continue
			}
		}
		blob, err := g.gitInput(ctx, nil, c.Data, "hash-object", "-w", "--stdin", "--path="+c.Path)
		if err != nil {
			return nil, fmt.Errorf("store %s as a commit would: %w", c.Path, err)
		}
		form, err := g.git(ctx, nil, "cat-file", "--filters", "--path="+c.Path, strings.TrimSpace(blob))
		if err != nil {
			return nil, fmt.Errorf("read %s back as a checkout would: %w", c.Path, err)
		}
		var differs []byte
		if !bytes.Equal([]byte(form), c.Data) {
			differs = []byte(form)
			out[c.Path] = differs
		}
		if keyed {
			t.forms.put(key, differs)
		}
	}
	return out, nil
}

// formMemo keeps CheckoutForms' answers for one tree: the form a checkout gives, nil when
// it gives the bytes back as they are. Safe for concurrent use; a nil *formMemo keeps
// nothing. It is bounded: an attempt writes a handful of files, and a key that stops
// matching (the file edited again) is never asked for again.
type formMemo struct {
	mu      sync.Mutex
	answers map[[sha256.Size]byte][]byte
}

// maxFormAnswers bounds a tree's formMemo; past it the oldest answers are dropped at once.
const maxFormAnswers = 256

func (m *formMemo) get(key [sha256.Size]byte) ([]byte, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	form, ok := m.answers[key]
	return bytes.Clone(form), ok
}

func (m *formMemo) put(key [sha256.Size]byte, form []byte) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.answers == nil || len(m.answers) >= maxFormAnswers {
		m.answers = map[[sha256.Size]byte][]byte{}
	}
	m.answers[key] = bytes.Clone(form)
}

// formKey is the digest of everything a CheckoutForms answer for c depends on that can
// change while the tree lives: c's path and bytes; the .gitattributes of the worktree's
// folders on c's path (the maker may write one, and git reads them there first); the
// repository's info/attributes and config files (core.autocrlf, core.eol, the filter
// drivers switched off by name); and the global attributes file git still reads with the
// global config off. ok is false when an input cannot be read as a file, or the config may
// bring in others (include, includeIf, core.attributesFile): git is asked each time. What
// does not change while a tree lives is left out: ticketd's command-scope config, the
// system's files (switched off) and the tree's index (reset when the tree is prepared and
// never restaged; git reads a .gitattributes there only where the working copy has none).
func (t *Tree) formKey(root *os.Root, c Change) (key [sha256.Size]byte, ok bool) {
	h := sha256.New()
	field := func(name string, data []byte, present bool) {
		fmt.Fprintf(h, "%s\x00%t\x00%d\x00", name, present, len(data))
		h.Write(data)
	}
	field("path", []byte(c.Path), true)
	field("data", c.Data, true)
	for dir := path.Dir(c.Path); ; dir = path.Dir(dir) {
		rel := path.Join(dir, ".gitattributes")
		data, present, err := readSmallInRoot(root, rel)
		if err != nil {
			return key, false
		}
		field("worktree:"+rel, data, present)
		if dir == "." {
			break
		}
	}
	outside := []string{filepath.Join(t.commonDir, "info", "attributes"), filepath.Join(t.gitDir, "info", "attributes"), globalAttributesFile()}
	configs := []string{filepath.Join(t.commonDir, "config"), filepath.Join(t.gitDir, "config.worktree")}
	for _, p := range append(outside, configs...) {
		if p == "" {
			continue
		}
		data, present, err := readSmall(p)
		if err != nil {
			return key, false
		}
		if slices.Contains(configs, p) {
			lower := bytes.ToLower(data)
			if bytes.Contains(lower, []byte("include")) || bytes.Contains(lower, []byte("attributesfile")) {
				return key, false
			}
		}
		field("file:"+p, data, present)
	}
	copy(key[:], h.Sum(nil))
	return key, true
}

// maxFormInput bounds an attributes or config file formKey reads; a larger one is not keyed.
const maxFormInput = 1 << 20

// readSmallInRoot reads the regular file rel inside root without following a symlink at its
// end: present false when there is none (or a symlink, which git does not read for
// .gitattributes either); an error for anything else it cannot read whole.
func readSmallInRoot(root *os.Root, rel string) ([]byte, bool, error) {
	fi, err := root.Lstat(filepath.FromSlash(rel))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return []byte("symlink"), false, nil
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxFormInput {
		return nil, false, fmt.Errorf("%s is not a small regular file", rel)
	}
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFormInput+1))
	if err != nil || len(data) > maxFormInput {
		return nil, false, fmt.Errorf("read %s: %v", rel, err)
	}
	return data, true, nil
}

// readSmall reads the file p outside the worktree (the git directory's, the user's): present
// false when there is none.
func readSmall(p string) ([]byte, bool, error) {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxFormInput {
		return nil, false, fmt.Errorf("%s is not a small regular file", p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// globalAttributesFile is the attributes file git reads when core.attributesFile is not set
// (the global config, where it could be, is off for ticketd's git): under XDG_CONFIG_HOME,
// else HOME's .config; "" when neither is set.
func globalAttributesFile() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", "attributes")
	}
	if h := os.Getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "git", "attributes")
	}
	return ""
}

// changesKey digests what a tree built from changes on base, and the patch from base to it,
// depend on besides the repository's objects: base (a full hash: a name can move), each
// change's path, bytes and mode, and the rules git stores and diffs them by (formKey: the
// .gitattributes on each path, info/attributes, the config). kind keeps a tree apart from a
// patch. ok is false when one of them cannot be keyed: git is asked each time.
func (t *Tree) changesKey(kind, base string, changes []Change) (key [sha256.Size]byte, ok bool) {
	if t.built == nil || !fullHash(base) {
		return key, false
	}
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return key, false
	}
	defer root.Close()
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", kind, base, len(changes))
	for _, c := range changes {
		if validChange(c) != nil {
			return key, false
		}
		k, ok := t.formKey(root, c)
		if !ok {
			return key, false
		}
		h.Write(k[:])
		fmt.Fprintf(h, "%t\x00", c.Executable)
	}
	copy(key[:], h.Sum(nil))
	return key, true
}

// builtMemo keeps the trees buildTree wrote and the patches DiffChanges made, by changesKey.
// Safe for concurrent use; a nil *builtMemo keeps nothing.
type builtMemo struct {
	mu      sync.Mutex
	answers map[[sha256.Size]byte]string
}

func (m *builtMemo) get(key [sha256.Size]byte) (string, bool) {
	if m == nil {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.answers[key]
	return v, ok
}

func (m *builtMemo) put(key [sha256.Size]byte, v string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.answers == nil || len(m.answers) >= maxFormAnswers {
		m.answers = map[[sha256.Size]byte]string{}
	}
	m.answers[key] = v
}
