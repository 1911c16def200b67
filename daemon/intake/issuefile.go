// Package intake turns outside issue sources into tickets. The first source is a local
// folder of Markdown files, one issue per file, each with a small front matter.
package intake

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Issue is one parsed issue file.
type Issue struct {
	Title  string
	Repo   string
	Labels []string
	Body   string
}

// MaxIssueBytes bounds an issue file; a larger one is refused rather than sent to a model.
const MaxIssueBytes = 256 << 10

// MaxTitleRunes bounds an issue's title, which becomes a commit's subject and a pull
// request's title (GitHub refuses longer ones).
const MaxTitleRunes = 256

// ErrIssueTooLarge is returned for an issue file over MaxIssueBytes.
var ErrIssueTooLarge = errors.New("issue file too large")

// ErrNoFrontMatter is returned for a file that does not start with a "---" line.
var ErrNoFrontMatter = errors.New("no front matter: the file must start with a line \"---\", then title/repo/labels, then \"---\"")

// ParseIssue parses an issue file:
//
//	---
//	title: Average of an empty list crashes
//	repo: sample
//	labels: [bug, math]
//	---
//	Free text written by a user.
//
// Only title, repo and labels are known keys; labels may be a flow list ([a, b]), a comma
// list (a, b) or a block list of "- a" lines. Values may be quoted. The title is required.
func ParseIssue(data []byte) (Issue, error) {
	if len(data) > MaxIssueBytes {
		return Issue{}, fmt.Errorf("%w: %d bytes, more than the %d allowed", ErrIssueTooLarge, len(data), MaxIssueBytes)
	}
	if !utf8.Valid(data) {
		return Issue{}, fmt.Errorf("issue file is not valid UTF-8 text (the first bad byte is at offset %d): save it as UTF-8; a binary file is no issue", invalidAt(data))
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	text = strings.TrimPrefix(text, "\ufeff")
	lines := strings.Split(text, "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		return Issue{}, ErrNoFrontMatter
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return Issue{}, errors.New("front matter is not closed: add a line \"---\" after the title/repo/labels lines")
	}
	var is Issue
	seen := map[string]bool{}
	var listKey string
	for i := 1; i < end; i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasPrefix(trimmed, "- ") || trimmed == "-" {
			if listKey != "labels" {
				return Issue{}, fmt.Errorf("front matter line %d: a list item %q outside labels", i+1, trimmed)
			}
			if l := unquote(strings.TrimSpace(strings.TrimPrefix(trimmed, "-"))); l != "" {
				is.Labels = append(is.Labels, l)
			}
			continue
		}
		key, value, ok := strings.Cut(trimmed, ":")
		if !ok {
			return Issue{}, fmt.Errorf("front matter line %d: %q is not \"key: value\"", i+1, trimmed)
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		if seen[key] {
			return Issue{}, fmt.Errorf("front matter line %d: key %q given twice", i+1, key)
		}
		seen[key] = true
		listKey = ""
		switch key {
		case "title":
			is.Title = unquote(value)
		case "repo":
			is.Repo = unquote(value)
		case "labels":
			if value == "" {
				listKey = "labels"
				continue
			}
			is.Labels = parseList(value)
		default:
			return Issue{}, fmt.Errorf("front matter line %d: unknown key %q (known: title, repo, labels)", i+1, key)
		}
	}
	if strings.TrimFunc(is.Title, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) == "" {
		return Issue{}, errors.New("front matter has no title: add \"title: <one line>\"")
	}
	if strings.ContainsAny(is.Title, "\n\r") {
		return Issue{}, errors.New("title must be one line")
	}
	if n := utf8.RuneCountInString(is.Title); n > MaxTitleRunes {
		return Issue{}, fmt.Errorf("title is %d characters, more than the %d allowed (a pull request's title): keep it to a short line and put the detail in the body", n, MaxTitleRunes)
	}
	is.Body = strings.TrimSpace(strings.Join(lines[end+1:], "\n"))
	return is, nil
}

// invalidAt is the offset of the first byte of data that is not UTF-8.
func invalidAt(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

func parseList(v string) []string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		v = v[1 : len(v)-1]
	}
	var out []string
	for _, part := range strings.Split(v, ",") {
		if p := unquote(strings.TrimSpace(part)); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		return v[1 : len(v)-1]
	}
	return v
}
