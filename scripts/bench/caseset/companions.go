package caseset

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// A case may bring companions: more issues filed against the same repository in the same
// night (issue 35). A duplicate reports the case's own failure again, in other words: it
// must be linked, never worked a second time. An overlap is another bug in the files the
// case's fix touches, with its own fix: both fixes must be published so that they apply
// and pass together, or the second kept back as conflicting, never two branches that fail
// together.

// Companion kinds.
const (
	CompanionDuplicate = "duplicate"
	CompanionOverlap   = "overlap"
)

// companionSpec is one entry of case.yaml's companions.
type companionSpec struct {
	Issue string `yaml:"issue"` // the issue file, in the case folder
	Kind  string `yaml:"kind"`  // duplicate or overlap
	Patch string `yaml:"patch"` // an overlap's fix (git diff against repo/); a duplicate's is the case's
}

// Companion is a companion issue as loaded.
type Companion struct {
	Kind   string
	File   string // its issue file's name
	Title  string
	Body   string
	Labels []string
	// Patch is the fix the scripted model answers it with.
	Patch string
}

// loadCompanions reads the companions case.yaml names.
func (c *Case) loadCompanions(specs []companionSpec) error {
	for i, s := range specs {
		if s.Issue == "" || filepath.Base(s.Issue) != s.Issue || !strings.HasSuffix(s.Issue, ".md") || s.Issue == "issue.md" {
			return c.bad("case.yaml", "companions[%d]: issue %q: want the name of another .md file in the case folder", i, s.Issue)
		}
		raw, err := os.ReadFile(filepath.Join(c.Dir, s.Issue))
		if err != nil {
			return c.bad(s.Issue, "%v", err)
		}
		k := Companion{Kind: s.Kind, File: s.Issue}
		if k.Title, k.Labels, k.Body, err = parseIssue(string(raw)); err != nil {
			return c.bad(s.Issue, "%v", err)
		}
		switch s.Kind {
		case CompanionDuplicate:
			if s.Patch != "" {
				return c.bad("case.yaml", "companions[%d]: a duplicate takes no patch (it is fixed by the case's own)", i)
			}
			k.Patch = c.Golden
		case CompanionOverlap:
			p, err := os.ReadFile(filepath.Join(c.Dir, filepath.Base(s.Patch)))
			if err != nil || !bytes.Contains(p, []byte("diff --git a/")) {
				return c.bad("case.yaml", "companions[%d]: patch %q: want a git-style diff in the case folder (%v)", i, s.Patch, err)
			}
			k.Patch = string(p)
		default:
			return c.bad("case.yaml", "companions[%d]: kind %q is not duplicate or overlap", i, s.Kind)
		}
		c.Companions = append(c.Companions, k)
	}
	return nil
}
