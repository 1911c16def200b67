package github

import (
	"encoding/json"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v89/github"
)

// reviewThread is one review thread of a pull request as GraphQL's reviewThreads gives it.
type reviewThread struct {
	ID       string
	Resolved bool
	Outdated bool
	Path     string
	Line     int
	Comments []threadComment
}

type threadComment struct {
	Login string // "" for a deleted account (GitHub's "ghost": author is null)
	Bot   bool
	Body  string
	URL   string
}

// reviewThreadsQuery reads a pull request's review threads; REST has no resolved state.
const reviewThreadsQuery = `query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100) {
        nodes {
          id isResolved isOutdated path line
          comments(first: 50) { nodes { author { login __typename } body url } }
        }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}`

// parseReviewThreads reads the reviewThreads answer. GraphQL answers 200 with "errors" for a
// query it cannot run, and a pull request it cannot see as null: both are errors here, never
// "no threads". Outside input: lines, authors and paths may be null.
func parseReviewThreads(data []byte) ([]reviewThread, error) {
	var out struct {
		Data *struct {
			Repository *struct {
				PullRequest *struct {
					ReviewThreads struct {
						Nodes []struct {
							ID         string `json:"id"`
							IsResolved bool   `json:"isResolved"`
							IsOutdated bool   `json:"isOutdated"`
							Path       string `json:"path"`
							Line       *int   `json:"line"`
							Comments   struct {
								Nodes []struct {
									Author *struct {
										Login    string `json:"login"`
										Typename string `json:"__typename"`
									} `json:"author"`
									Body string `json:"body"`
									URL  string `json:"url"`
								} `json:"nodes"`
							} `json:"comments"`
						} `json:"nodes"`
					} `json:"reviewThreads"`
				} `json:"pullRequest"`
			} `json:"repository"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("review threads: %w", err)
	}
	if len(out.Errors) > 0 {
		msgs := make([]string, len(out.Errors))
		for i, e := range out.Errors {
			msgs[i] = e.Message
		}
		return nil, fmt.Errorf("review threads: GraphQL: %s", strings.Join(msgs, "; "))
	}
	if out.Data == nil || out.Data.Repository == nil || out.Data.Repository.PullRequest == nil {
		return nil, fmt.Errorf("review threads: GitHub named no pull request (no access, or it is gone)")
	}
	var threads []reviewThread
	for _, n := range out.Data.Repository.PullRequest.ReviewThreads.Nodes {
		th := reviewThread{ID: n.ID, Resolved: n.IsResolved, Outdated: n.IsOutdated, Path: n.Path}
		if n.Line != nil && *n.Line > 0 {
			th.Line = *n.Line
		}
		for _, c := range n.Comments.Nodes {
			tc := threadComment{Body: c.Body, URL: c.URL}
			if c.Author != nil {
				tc.Login, tc.Bot = c.Author.Login, c.Author.Typename == "Bot"
			}
			th.Comments = append(th.Comments, tc)
		}
		threads = append(threads, th)
	}
	return threads, nil
}

// isBot says whether a GitHub account is a bot: its type, or an App's "[bot]" login.
func isBot(login, typ string) bool {
	return strings.EqualFold(typ, "Bot") || strings.HasSuffix(strings.ToLower(login), "[bot]")
}

// reviewAsks says whether review r may ask a round: a submitted review (changes requested,
// or comments) by a person other than ticketd's account. An approval or a dismissed or
// pending review asks nothing; bots never do (review bots answering each other loop).
// Write access is checked apart (it costs a request).
func reviewAsks(r *gh.PullRequestReview, self string) bool {
	switch r.GetState() {
	case "CHANGES_REQUESTED", "COMMENTED":
	default:
		return false
	}
	login := r.GetUser().GetLogin()
	return login != "" && !isBot(login, r.GetUser().GetType()) && !strings.EqualFold(login, self)
}

// openThreads are the unresolved threads a person started: a thread opened by a bot or by
// ticketd itself asks nothing, and a resolved one is done.
func openThreads(threads []reviewThread, self string) []reviewThread {
	var out []reviewThread
	for _, th := range threads {
		if th.Resolved || len(th.Comments) == 0 {
			continue
		}
		first := th.Comments[0]
		if first.Login == "" || first.Bot || isBot(first.Login, "") || strings.EqualFold(first.Login, self) {
			continue
		}
		out = append(out, th)
	}
	return out
}
