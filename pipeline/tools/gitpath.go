package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrGitLookalike is returned for a path git itself would refuse to check out or fsck
// --strict would flag: a component that a case-insensitive, HFS+ or NTFS file system takes
// for .git.
var ErrGitLookalike = fmt.Errorf("path has a component that a file system would take for .git")

// checkGitLookalike refuses, at the write tools, a path with a component git's verify_path
// refuses and fsck reports as hasDotgit: ".git" spelled with characters HFS+ ignores
// (".git\u200d", "\u200c.git"), or as NTFS reads it (".git.", ".git ", ".git::$INDEX_ALLOCATION",
// the short name "git~1"), in any letter case. Committed, such a file becomes a .git on a
// checkout elsewhere, and the branch fails fsck.
func checkGitLookalike(rel string) error {
	for _, c := range strings.Split(rel, "/") {
		if isHFSDotGit(c) || isNTFSDotGit(c) {
			return fmt.Errorf("%q: %w (%q): git refuses such a path; choose another name", rel, ErrGitLookalike, c)
		}
	}
	return nil
}

// hfsIgnorable are the code points HFS+ drops when it compares names (git's next_hfs_char).
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// isHFSDotGit reports whether c is ".git" once HFS+'s ignorable code points are removed
// and letters folded (git's is_hfs_dotgit).
func isHFSDotGit(c string) bool {
	var b strings.Builder
	for len(c) > 0 {
		r, n := utf8.DecodeRuneInString(c)
		c = c[n:]
		if hfsIgnorable(r) {
			continue
		}
		if r >= utf8.RuneSelf {
			return false
		}
		b.WriteRune(r)
	}
	return strings.EqualFold(b.String(), ".git")
}

// isNTFSDotGit reports whether NTFS reads c as .git: ".git" or its short name "git~1", in
// any case, followed only by dots and spaces, or by a colon (an alternate data stream)
// (git's is_ntfs_dotgit).
func isNTFSDotGit(c string) bool {
	lower := strings.ToLower(c)
	var rest string
	switch {
	case strings.HasPrefix(lower, ".git"):
		rest = c[4:]
	case strings.HasPrefix(lower, "git~1"):
		rest = c[5:]
	default:
		return false
	}
	for _, r := range rest {
		switch r {
		case ':':
			return true
		case '.', ' ':
		default:
			return false
		}
	}
	return true
}
