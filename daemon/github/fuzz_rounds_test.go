package github

import (
	"encoding/json"
	"strings"
	"testing"

	gh "github.com/google/go-github/v89/github"
)

// FuzzParseReviewThreads: any answer to the reviewThreads query is parsed into threads or
// refused with an error, never a panic; a thread's line is never negative, and a parsed
// answer never comes with GraphQL errors ignored.
func FuzzParseReviewThreads(f *testing.F) {
	for _, s := range []string{
		`{"data":{"repository":{"pullRequest":{"reviewThreads":{"nodes":[{"id":"PRRT_1","isResolved":false,"isOutdated":false,"path":"a.py","line":3,"comments":{"nodes":[{"author":{"login":"alice","__typename":"User"},"body":"fix","url":"u"}]}}]}}}}}`,
		`{"data":{"repository":{"pullRequest":{"reviewThreads":{"nodes":[{"id":"x","isResolved":true,"path":"a.py","line":null,"comments":{"nodes":[{"author":null,"body":"ghost"}]}}]}}}}}`,
		`{"data":{"repository":{"pullRequest":null}}}`,
		`{"data":null,"errors":[{"message":"Could not resolve to a Repository"}]}`,
		`{"data":{"repository":{"pullRequest":{"reviewThreads":{"nodes":[{"id":"PRRT_2","comments":{"nodes":[],"pageInfo":{"hasNextPage":true,"endCursor":"Y3Vyc29yOjUw"}}}],"pageInfo":{"hasNextPage":true,"endCursor":null}}}}}}`,
		`{"errors":[]}`, `[]`, `null`, `{"data":{"repository":{"pullRequest":{"reviewThreads":{"nodes":[{"line":-4}]}}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		page, err := parseReviewThreads(data)
		if err != nil {
			return
		}
		threads := page.Threads
		if strings.Contains(string(data), `"errors":[{`) && json.Valid(data) {
			var probe struct {
				Errors []json.RawMessage `json:"errors"`
			}
			if json.Unmarshal(data, &probe) == nil && len(probe.Errors) > 0 {
				t.Fatalf("GraphQL errors ignored: %s", data)
			}
		}
		for _, th := range threads {
			if th.Line < 0 {
				t.Errorf("thread %q has line %d", th.ID, th.Line)
			}
		}
		for i := range page.MoreComments {
			if i < 0 || i >= len(threads) {
				t.Errorf("more comments for thread %d of %d", i, len(threads))
			}
		}
		_ = openThreads(threads, "ticketd-bot")
	})
}

// FuzzParseThreadComments: any answer to a review thread's comments query is parsed or
// refused, never a panic, and a parsed answer never comes with GraphQL errors ignored.
func FuzzParseThreadComments(f *testing.F) {
	for _, s := range []string{
		`{"data":{"node":{"comments":{"nodes":[{"author":{"login":"alice","__typename":"User"},"body":"b","url":"u"}],"pageInfo":{"hasNextPage":true,"endCursor":"Y3Vyc29yOnYyOjQ5"}}}}}`,
		`{"data":{"node":{"comments":{"nodes":[{"author":null,"body":null}],"pageInfo":{"hasNextPage":false,"endCursor":null}}}}}`,
		`{"data":{"node":null},"errors":[{"message":"Could not resolve to a node with the global id of 'x'"}]}`,
		`{"data":{"node":{}}}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, err := parseThreadComments(data)
		var probe struct {
			Errors []json.RawMessage `json:"errors"`
		}
		if err == nil && json.Unmarshal(data, &probe) == nil && len(probe.Errors) > 0 {
			t.Fatalf("GraphQL errors ignored: %s", data)
		}
	})
}

// FuzzReviewAsks: a review payload decoded as go-github decodes it never asks a round for a
// bot, for ticketd's own account, for an unnamed author, or for any state but changes
// requested or commented.
func FuzzReviewAsks(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"user":{"login":"alice","type":"User"},"state":"CHANGES_REQUESTED","body":"x"}`,
		`{"id":2,"user":{"login":"dependabot[bot]","type":"Bot"},"state":"COMMENTED"}`,
		`{"id":3,"user":{"login":"review-app[bot]","type":"User"},"state":"COMMENTED"}`,
		`{"id":4,"user":null,"state":"COMMENTED"}`,
		`{"id":5,"user":{"login":"TICKETD-BOT"},"state":"CHANGES_REQUESTED"}`,
		`{"id":6,"user":{"login":"bob"},"state":"APPROVED"}`,
		`{"id":7,"user":{"login":"bob"},"state":"PENDING"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r gh.PullRequestReview
		if json.Unmarshal(data, &r) != nil {
			return
		}
		if !reviewAsks(&r, "ticketd-bot") {
			return
		}
		login := r.GetUser().GetLogin()
		switch {
		case login == "", isBot(login, r.GetUser().GetType()), strings.EqualFold(login, "ticketd-bot"):
			t.Errorf("review by %q (type %q) asks a round", login, r.GetUser().GetType())
		case r.GetState() != "CHANGES_REQUESTED" && r.GetState() != "COMMENTED":
			t.Errorf("a %q review asks a round", r.GetState())
		}
	})
}
