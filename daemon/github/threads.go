package github

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

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
	// At is when it was written (zero when GitHub named no time).
	At time.Time
}

// reviewThreadsQuery reads a page of a pull request's review threads (REST has no resolved
// state), each with its first page of comments; $cursor is the previous page's endCursor,
// null for the first page. GitHub caps first at 100.
const reviewThreadsQuery = `query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $cursor) {
        nodes {
          id isResolved isOutdated path line
          comments(first: 50) {
            nodes { author { login __typename } body url createdAt }
            pageInfo { hasNextPage endCursor }
          }
        }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}`

// threadCommentsQuery reads the comments of one review thread after $cursor: a thread whose
// conversation is longer than the first page reviewThreadsQuery reads.
const threadCommentsQuery = `query($id: ID!, $cursor: String) {
  node(id: $id) {
    ... on PullRequestReviewThread {
      comments(first: 100, after: $cursor) {
        nodes { author { login __typename } body url createdAt }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}`

// pageInfo is GraphQL's cursor pagination: more follows after endCursor when hasNextPage.
type pageInfo struct {
	HasNextPage bool    `json:"hasNextPage"`
	EndCursor   *string `json:"endCursor"`
}

// next is the cursor of the following page, "" when there is none (or GitHub named none:
// asking again without a cursor would read the first page forever).
func (p pageInfo) next() string {
	if !p.HasNextPage || p.EndCursor == nil {
		return ""
	}
	return *p.EndCursor
}

// commentConnection is a thread's comments, one page of them.
type commentConnection struct {
	Nodes []struct {
		Author *struct {
			Login    string `json:"login"`
			Typename string `json:"__typename"`
		} `json:"author"`
		Body      string `json:"body"`
		URL       string `json:"url"`
		CreatedAt string `json:"createdAt"`
	} `json:"nodes"`
	PageInfo pageInfo `json:"pageInfo"`
}

func (cc commentConnection) comments() []threadComment {
	var out []threadComment
	for _, c := range cc.Nodes {
		tc := threadComment{Body: c.Body, URL: c.URL}
		if at, err := time.Parse(time.RFC3339, c.CreatedAt); err == nil {
			tc.At = at // outside input: a missing or odd time only loses the ordering
		}
		if c.Author != nil {
			tc.Login, tc.Bot = c.Author.Login, c.Author.Typename == "Bot"
		}
		out = append(out, tc)
	}
	return out
}

// threadsPage is one answer to reviewThreadsQuery: its threads, the cursor of the next page
// ("" at the last), and for each thread whose comments go on, the cursor after its first page.
type threadsPage struct {
	Threads []reviewThread
	Next    string
	// MoreComments maps an index into Threads to the cursor after its comments' first page.
	MoreComments map[int]string
}

// graphQLErrors turns GraphQL's "errors" (sent with status 200 for a query it cannot run)
// into an error, nil when there are none.
func graphQLErrors(what string, errs []struct {
	Message string `json:"message"`
}) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Message
	}
	return fmt.Errorf("%s: GraphQL: %s", what, strings.Join(msgs, "; "))
}

// parseReviewThreads reads one page of the reviewThreads answer. GraphQL answers 200 with
// "errors" for a query it cannot run, and a pull request it cannot see as null: both are
// errors here, never "no threads". Outside input: lines, authors and paths may be null.
func parseReviewThreads(data []byte) (threadsPage, error) {
	var out struct {
		Data *struct {
			Repository *struct {
				PullRequest *struct {
					ReviewThreads struct {
						Nodes []struct {
							ID         string            `json:"id"`
							IsResolved bool              `json:"isResolved"`
							IsOutdated bool              `json:"isOutdated"`
							Path       string            `json:"path"`
							Line       *int              `json:"line"`
							Comments   commentConnection `json:"comments"`
						} `json:"nodes"`
						PageInfo pageInfo `json:"pageInfo"`
					} `json:"reviewThreads"`
				} `json:"pullRequest"`
			} `json:"repository"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return threadsPage{}, fmt.Errorf("review threads: %w", err)
	}
	if err := graphQLErrors("review threads", out.Errors); err != nil {
		return threadsPage{}, err
	}
	if out.Data == nil || out.Data.Repository == nil || out.Data.Repository.PullRequest == nil {
		return threadsPage{}, fmt.Errorf("review threads: GitHub named no pull request (no access, or it is gone)")
	}
	rt := out.Data.Repository.PullRequest.ReviewThreads
	page := threadsPage{Next: rt.PageInfo.next()}
	for _, n := range rt.Nodes {
		th := reviewThread{ID: n.ID, Resolved: n.IsResolved, Outdated: n.IsOutdated, Path: n.Path, Comments: n.Comments.comments()}
		if n.Line != nil && *n.Line > 0 {
			th.Line = *n.Line
		}
		if c := n.Comments.PageInfo.next(); c != "" && n.ID != "" {
			if page.MoreComments == nil {
				page.MoreComments = map[int]string{}
			}
			page.MoreComments[len(page.Threads)] = c
		}
		page.Threads = append(page.Threads, th)
	}
	return page, nil
}

// parseThreadComments reads one answer to threadCommentsQuery: the comments and the cursor
// after them ("" at the last page).
func parseThreadComments(data []byte) ([]threadComment, string, error) {
	var out struct {
		Data *struct {
			Node *struct {
				Comments *commentConnection `json:"comments"`
			} `json:"node"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, "", fmt.Errorf("review thread comments: %w", err)
	}
	if err := graphQLErrors("review thread comments", out.Errors); err != nil {
		return nil, "", err
	}
	if out.Data == nil || out.Data.Node == nil || out.Data.Node.Comments == nil {
		return nil, "", fmt.Errorf("review thread comments: GitHub named no review thread (no access, or it is gone)")
	}
	return out.Data.Node.Comments.comments(), out.Data.Node.Comments.PageInfo.next(), nil
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
