package github

import (
	"testing"
	"unicode/utf8"
)

// FuzzParseExternalID: any string either is rejected or parses into a repository and a
// positive number whose formatted id parses back to the same; it never panics.
func FuzzParseExternalID(f *testing.F) {
	for _, s := range []string{"acme/app#12", "acme/app#0", "a/b/c#1", "#", "acme/app#-1", "acme/app#99999999999999999999", "x/y#1#2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		repo, n, err := ParseExternalID(s)
		if err != nil {
			return
		}
		repo2, n2, err := ParseExternalID(ExternalID(repo, n))
		if n <= 0 || err != nil || repo2 != repo || n2 != n {
			t.Errorf("ParseExternalID(%q) = %q, %d; formatted back: %q, %d, %v", s, repo, n, repo2, n2, err)
		}
	})
}

// FuzzDefuse: defusing untrusted text leaves no live @mention or closing keyword, keeps
// valid UTF-8 valid, and is idempotent.
func FuzzDefuse(f *testing.F) {
	for _, s := range []string{"thanks @alice", "Fixes #12", "closes: acme/app#3 and resolves #4", "a@b.com", "`@x`", "`@open and more", "``a` @b``", "fix #1 @a @b", "Fixes https://github.com/o/r/issues/2", "see GH-7", "&#39;#1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := defuse(s)
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("defuse(%q) = %q: invalid UTF-8", s, got)
		}
		if liveMention(got) {
			t.Errorf("defuse(%q) = %q: still has a mention", s, got)
		}
		if closeRe.MatchString(got) {
			t.Errorf("defuse(%q) = %q: still has a closing keyword", s, got)
		}
		if refRe.MatchString(got) || ghRe.MatchString(got) || issueURLRe.MatchString(got) {
			t.Errorf("defuse(%q) = %q: still has an issue reference", s, got)
		}
		if again := defuse(got); again != got {
			t.Errorf("defuse is not idempotent on %q: %q then %q", s, got, again)
		}
	})
}

// liveMention reports an @mention outside the closed code spans of s: one GitHub would
// notify.
func liveMention(s string) bool {
	for len(s) > 0 {
		start, end := nextCodeSpan(s)
		if plainMentionRe.MatchString(s[:start]) {
			return true
		}
		s = s[end:]
	}
	return false
}
