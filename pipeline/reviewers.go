package pipeline

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
)

// The review angles a checker can take. Correctness always reviews; the others are opt-in
// (config review.reviewers), each where it pays: a published three-reviewer experiment found
// that reviewers on every change cost 2.6x the tokens for +19% valid findings, while a
// security reviewer pays where a change touches paths, auth, shell, SQL or deserialisation.
const (
	AngleCorrectness = "correctness"
	AngleSecurity    = "security"
	AnglePerformance = "performance"
)

// Angles lists the review angles in the order they run.
var Angles = []string{AngleCorrectness, AngleSecurity, AnglePerformance}

// DefaultSecurityTouches are what a security reviewer listed without paths or touches runs
// on: added or removed lines that handle file paths, authentication, shell commands, SQL or
// deserialisation.
var DefaultSecurityTouches = []string{
	`\b(open|os\.path\.join|os\.remove|shutil\.\w+|send_file|send_from_directory|realpath|abspath)\(|\.\./|\bPath\(`,
	`(?i)\b(password|passwd|secret|token|api_key|auth\w*|login|session|permission|is_admin|jwt|csrf|hmac)\b`,
	`\b(subprocess\.\w+|os\.system|os\.popen|shell\s*=\s*True|exec\(|eval\()`,
	`(?i)\b(execute|executemany|raw)\(|\b(SELECT|INSERT|UPDATE|DELETE)\s.+\b(FROM|INTO|SET|WHERE)\b`,
	`\b(pickle|cPickle|marshal|shelve)\.|\byaml\.(load|unsafe_load)\(|\bjsonpickle\b`,
}

// Reviewer is one review angle and where it applies. A reviewer with neither Paths nor
// Touches applies to every change, except security, which then uses
// DefaultSecurityTouches.
type Reviewer struct {
	Angle string
	// Paths are globs over the changed files' repository paths ("**" crosses folders; a
	// pattern without "/" matches the file name at any depth, as in .gitignore).
	Paths []string
	// Touches are regular expressions (RE2) matched against the diff's added and removed
	// lines: "when the diff touches".
	Touches []string

	paths   []*regexp.Regexp
	touches []*regexp.Regexp
}

// NewReviewer checks and compiles a reviewer; the error names what is wrong.
func NewReviewer(angle string, paths, touches []string) (Reviewer, error) {
	r := Reviewer{Angle: angle, Paths: slices.Clone(paths), Touches: slices.Clone(touches)}
	if !slices.Contains(Angles, angle) {
		return r, fmt.Errorf("angle %q: want one of %s", angle, strings.Join(Angles, ", "))
	}
	if angle == AngleCorrectness && (len(paths) > 0 || len(touches) > 0) {
		return r, fmt.Errorf("correctness reviews every change: it takes no paths or touches")
	}
	for i, g := range paths {
		re, err := globRegexp(g)
		if err != nil {
			return r, fmt.Errorf("paths[%d] %q: %w", i, g, err)
		}
		r.paths = append(r.paths, re)
	}
	if angle == AngleSecurity && len(paths) == 0 && len(touches) == 0 {
		touches = DefaultSecurityTouches
	}
	for i, t := range touches {
		re, err := regexp.Compile(t)
		if err != nil {
			return r, fmt.Errorf("touches[%d] %q is not a regular expression (RE2 syntax): %w", i, t, err)
		}
		r.touches = append(r.touches, re)
	}
	return r, nil
}

// Applies says whether the reviewer reviews a change of the changed paths with this diff,
// and why ("" for a reviewer of every change).
func (r Reviewer) Applies(changed []string, diff string) (bool, string) {
	if len(r.paths) == 0 && len(r.touches) == 0 {
		return true, ""
	}
	for _, p := range changed {
		for i, re := range r.paths {
			if re.MatchString(p) {
				return true, fmt.Sprintf("%s matches %s", p, r.Paths[i])
			}
		}
	}
	for _, l := range strings.Split(diff, "\n") {
		if len(l) == 0 || (l[0] != '+' && l[0] != '-') || strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") {
			continue
		}
		for _, re := range r.touches {
			if m := re.FindString(l[1:]); m != "" {
				return true, fmt.Sprintf("the diff touches %q", clip(m, 60))
			}
		}
	}
	return false, ""
}

// globRegexp turns a path glob into a regular expression over slash-separated paths
// (discover.GlobRegexp, the glob of testpaths: "**" matches across folders, "*" and "?"
// within one, [...] a class as in Python's fnmatch, [!...] its negation), anchored at the
// root by a leading "/"; a pattern without "/" matches the last path element at any depth,
// as in .gitignore (where testpaths, a Python glob, match at the root only). A "[" that no
// "]" closes, which the glob reads as itself, is refused here: in configuration it is a typo.
func globRegexp(g string) (*regexp.Regexp, error) {
	if strings.TrimSpace(g) == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	if i := strings.IndexByte(g, '['); i >= 0 && !strings.Contains(g[i+1:], "]") {
		return nil, fmt.Errorf("bad glob: a [ at byte %d that no ] closes (write [[] for the character itself)", i)
	}
	pat := strings.TrimPrefix(g, "/")
	if !strings.Contains(pat, "/") {
		pat = "**/" + pat
	}
	re, err := discover.GlobRegexp(pat)
	if err != nil {
		return nil, fmt.Errorf("bad glob: %w", err)
	}
	return re, nil
}

// DefaultReviewers is correctness alone: what a configuration without review.reviewers runs.
func DefaultReviewers() []Reviewer {
	r, _ := NewReviewer(AngleCorrectness, nil, nil)
	return []Reviewer{r}
}

// angleInstructions narrow a reviewer to its angle. They come last in its request, after the
// diff, so every reviewer of a change shares the checker's prefix up to the diff in cache;
// correctness has none, so its request, which runs first, is that very prefix.
var angleInstructions = map[string]string{
	AngleSecurity: `# Review angle: security

Review the diff above for security defects only: path traversal and unsafe file paths, missing or broken authentication and authorisation, shell or command injection, SQL injection, unsafe deserialisation (pickle, yaml.load, eval), secrets written to code or logs, a check that can be bypassed. Use the same JSON schema, with "category": "security". Leave correctness, style and performance to the other reviewers. Most changes have no security defect: then answer {"findings": []}.`,
	AnglePerformance: `# Review angle: performance

Review the diff above for performance defects only: work that grows worse than it must with the input (a loop inside a loop over the same data, a sort or a query inside a loop, a list searched where a set or dict would do), repeated I/O or recompilation, unbounded memory, blocking calls in a hot path. Use the same JSON schema, with "category": "performance". Report only what matters at the sizes the code plausibly sees; leave correctness and style to the other reviewers. Most changes have no performance defect: then answer {"findings": []}.`,
}
