package github

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/store"
)

// Bounds on what one review round carries to the maker. A busy pull request can hold
// hundreds of unresolved threads (ticketd never resolves them); a round takes the ones most
// likely to matter and says how many it left out, rather than cutting silently.
const (
	// roundThreadsMax is the most threads (asking reviews' own text included) a round
	// carries: the store takes at most 50.
	roundThreadsMax = 50
	// roundTextMax bounds the round's threads as the store keeps them (JSON bytes, under the
	// store's 64 KiB): about 8k tokens of the maker's prompt.
	roundTextMax = 32 << 10
	// threadTextMax bounds one thread's text: the maker's prompt quotes 2000 bytes of a thread.
	threadTextMax = 2000
)

// roundThreads is what a review round is asked with: the threads kept, and a note for the
// maker and the reviewer ("" when nothing was left out).
type roundThreads struct {
	Threads []store.Thread
	Note    string
	LeftOut int
}

// candidate is one thread or asking review's text that a round may carry.
type candidate struct {
	th       store.Thread
	review   bool      // an asking review's own text: what asked the round
	outdated bool      // the code it points at changed since
	last     time.Time // its newest comment by a person
	order    int       // its place in GitHub's order (oldest first)
}

// pickRoundThreads chooses what a round carries from the open threads (GitHub's order) and
// the asking reviews' texts: the asking reviews first, then the threads on current code,
// then the outdated ones, each by their newest comment from a person, newest first, while
// they fit roundThreadsMax and roundTextMax. What is kept keeps GitHub's order, threads
// before the reviews' texts; what is left out is counted in the note.
func pickRoundThreads(open []reviewThread, reviews []store.Thread) roundThreads {
	var cands []candidate
	for i, th := range open {
		c := candidate{th: store.Thread{ID: th.ID, Author: th.Comments[0].Login, Path: th.Path, Line: th.Line,
			Body: threadText(th, threadTextMax), URL: th.Comments[0].URL}, outdated: th.Outdated, order: i}
		for _, cm := range th.Comments {
			if !cm.Bot && cm.Login != "" && cm.At.After(c.last) {
				c.last = cm.At
			}
		}
		cands = append(cands, c)
	}
	for i, r := range reviews {
		r.Body = clipBytes(r.Body, threadTextMax)
		cands = append(cands, candidate{th: r, review: true, order: len(open) + i})
	}
	ranked := slices.Clone(cands)
	slices.SortStableFunc(ranked, func(a, b candidate) int {
		switch {
		case a.review != b.review:
			return boolFirst(a.review)
		case a.outdated != b.outdated:
			return boolFirst(!a.outdated)
		case !a.last.Equal(b.last):
			return b.last.Compare(a.last)
		}
		return b.order - a.order // GitHub lists threads oldest first
	})
	kept := map[int]bool{}
	size := 2 // the JSON array's brackets
	for _, c := range ranked {
		if len(kept) == roundThreadsMax {
			break
		}
		n := jsonSize(c.th) + 1
		if size+n > roundTextMax {
			continue // a smaller one after it may still fit
		}
		size += n
		kept[c.order] = true
	}
	var out roundThreads
	leftOutdated := 0
	for _, c := range cands {
		if kept[c.order] {
			out.Threads = append(out.Threads, c.th)
			continue
		}
		out.LeftOut++
		if c.outdated {
			leftOutdated++
		}
	}
	if out.LeftOut > 0 {
		out.Note = fmt.Sprintf("This round carries %d of the %d unresolved review threads and review texts "+
			"(at most %d, and %d KiB of their text: the asking reviews' text first, then threads on the current code, "+
			"then outdated ones, each by its newest comment first); %d were left out, %d of them outdated. "+
			"They stay open on the pull request: resolve the threads that are done, and the next review brings the rest.",
			len(out.Threads), len(cands), roundThreadsMax, roundTextMax>>10, out.LeftOut, leftOutdated)
	}
	return out
}

func boolFirst(a bool) int {
	if a {
		return -1
	}
	return 1
}

// jsonSize is th's size as the store keeps it.
func jsonSize(th store.Thread) int {
	b, err := json.Marshal(th)
	if err != nil {
		return roundTextMax // cannot happen for strings and ints; never kept if it did
	}
	return len(b)
}

// threadText is a thread's conversation within limit bytes: its first comment (the ask), then
// the replies by people, each with its author. When it does not fit, the newest replies are
// kept and the earlier ones counted, since the newest word is what the reviewer wants now.
func threadText(th reviewThread, limit int) string {
	first := th.Comments[0].Body
	var replies []string
	for _, c := range th.Comments[1:] {
		if c.Bot || c.Login == "" {
			continue
		}
		replies = append(replies, fmt.Sprintf("\n\n%s replied: %s", c.Login, c.Body))
	}
	whole := first + strings.Join(replies, "")
	if len(whole) <= limit {
		return whole
	}
	if len(replies) == 0 {
		return clipBytes(first, limit)
	}
	head := clipBytes(first, limit/2)
	room := limit - len(head) - len("\n\n[999999 earlier replies left out]")
	var tail []string
	for i := len(replies) - 1; i >= 0; i-- {
		r := replies[i]
		if len(r) > room {
			if len(tail) == 0 { // the newest reply alone is too long: keep its start
				tail = append(tail, clipBytes(r, room))
			}
			break
		}
		room -= len(r)
		tail = append(tail, r)
	}
	slices.Reverse(tail)
	note := ""
	if skipped := len(replies) - len(tail); skipped > 0 {
		note = fmt.Sprintf("\n\n[%d earlier replies left out]", skipped)
	}
	return head + note + strings.Join(tail, "")
}

// clipBytes cuts s to at most limit bytes on a rune boundary, marking the cut with "…".
func clipBytes(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const mark = "…"
	n := limit - len(mark)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)] + mark
}
