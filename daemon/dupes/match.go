package dupes

import (
	"fmt"
	"slices"
)

// DefaultSimilarity is the word-set Jaccard similarity of title and body at and above which
// two issues without contradicting evidence are duplicates; docs/night.md has the table
// it was chosen from (TestSimilarityTable).
const DefaultSimilarity = 0.5

// Ticket is what the matcher needs of a ticket.
type Ticket struct {
	ID          int64
	Repo        string
	Title, Body string
}

// Match tells whether b reports the same failure as a, and why. Tickets of different
// repositories never match. A shared failing test or an equal innermost frame match; two
// tracebacks whose innermost frames differ never do (they are different failures, however
// alike their words); otherwise the words' Jaccard similarity must reach threshold (a
// threshold of 0 or less turns similarity off).
func Match(a, b Ticket, sa, sb Signature, threshold float64) (bool, string) {
	if a.Repo != b.Repo {
		return false, ""
	}
	for _, t := range sa.Tests {
		if _, found := slices.BinarySearch(sb.Tests, t); found {
			return true, "same failing test " + t
		}
	}
	if sa.Frame != (Frame{}) && sb.Frame != (Frame{}) {
		if sa.Frame == sb.Frame {
			return true, "same innermost traceback frame " + sa.Frame.String()
		}
		return false, ""
	}
	if threshold <= 0 {
		return false, ""
	}
	if j := Jaccard(sa.Words, sb.Words); j >= threshold {
		return true, fmt.Sprintf("title and body %.2f similar (threshold %.2f)", j, threshold)
	}
	return false, ""
}

// Jaccard is |a∩b| / |a∪b| (0 for two empty sets).
func Jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// Link is one ticket found a duplicate of an earlier one.
type Link struct {
	ID, Of int64
	Reason string
}

// Find links each candidate to the earliest earlier ticket (smaller id) of its repository
// in open that it duplicates. candidates are the tickets that may become duplicates
// (queued, never attempted); open are the tickets that may be worked for others (open,
// not duplicates), candidates included. Ids decide who is worked: the first report wins.
func Find(candidates, open []Ticket, threshold float64) []Link {
	sigs := make(map[int64]Signature, len(open))
	sig := func(t Ticket) Signature {
		s, ok := sigs[t.ID]
		if !ok {
			s = Parse(t.Title, t.Body)
			sigs[t.ID] = s
		}
		return s
	}
	byID := slices.Clone(open)
	slices.SortFunc(byID, byTicketID)
	candidates = slices.Clone(candidates)
	slices.SortFunc(candidates, byTicketID)
	linked := map[int64]bool{}
	var out []Link
	for _, c := range candidates {
		for _, o := range byID {
			if o.ID >= c.ID {
				break
			}
			if linked[o.ID] {
				continue // a duplicate is not worked for others: link to what it duplicates
			}
			if ok, why := Match(o, c, sig(o), sig(c), threshold); ok {
				out = append(out, Link{ID: c.ID, Of: o.ID, Reason: why})
				linked[c.ID] = true
				break
			}
		}
	}
	return out
}

func byTicketID(x, y Ticket) int { return int(min(max(x.ID-y.ID, -1), 1)) }
