package daemon

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// agentsMD is a repository's AGENTS.md as projects write them: how to run the tests, what
// not to touch, the style.
const agentsMD = `# Notes for coding agents

- Run the tests with ` + "`python -m pytest -q tests`" + ` from the repository root; they need no network.
- shop/catalogue_*.py are generated from the product feed: never edit them by hand.
- Prices are integers in cents; never use floats for money.
- Keep functions small and keep the docstring's first line in the imperative.
- Every bug fix comes with a regression test in tests/, named after the rule it fixes.
`

// TestRepoInstructionsCached: with an AGENTS.md committed at the base, every request of every
// role carries it in the repository part, after the static system message and before the
// ticket, and it is cached with that part: each role's first request of the later tickets
// finds at least the share of its prompt cached that it finds without the file. The night
// without it is TestPromptCacheShare's cache-friendly night: each of its shares must be at
// least cacheFriendlyShare.
func TestRepoInstructionsCached(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	const tickets = cacheTickets
	shares := map[bool]map[string][]float64{}
	var block map[string]float64
	for _, with := range []bool{false, true} {
		f := newFixture(t, tickets)
		if with {
			write(t, filepath.Join(f.repo, "AGENTS.md"), agentsMD)
			git(t, f.repo, "add", "AGENTS.md")
			git(t, f.repo, "commit", "-q", "-m", "agents notes")
		}
		server, url := f.scripted(t, scriptedmodel.Options{Seed: 7})
		n := runNight(t, f.config(t, url, cacheWorkers), pipeline.LayoutCacheFriendly)
		list, err := n.store.List(context.Background(), store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range list {
			if tk.State != store.StateDone {
				t.Errorf("with AGENTS.md %v: ticket %d: %s (%s)", with, tk.ID, tk.State, tk.Reason)
			}
		}
		shares[with] = firstRequestShares(t, n.store, tickets)
		if !with {
			// TestPromptCacheShare's cache-friendly layout, checked on this night.
			for _, role := range model.Roles {
				got := shares[false][string(role)]
				if len(got) != tickets-1 {
					t.Errorf("without AGENTS.md: %s: %d first requests after the first, want %d", role, len(got), tickets-1)
				}
				for i, s := range got {
					if s < cacheFriendlyShare {
						t.Errorf("without AGENTS.md: %s: first request #%d has cached share %.3f, want >= %.2f", role, i+2, s, cacheFriendlyShare)
					}
				}
				t.Logf("without AGENTS.md: %s first-request cached shares: %v", role, fmtShares(got))
			}
		}
		if with {
			block = cacheBlockShares(t, n.store, tickets)
		}
		for _, r := range server.Requests() {
			var body struct {
				Messages []struct{ Role, Content string } `json:"messages"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			sys, user := body.Messages[0].Content, body.Messages[1].Content
			if strings.HasPrefix(user, "ticketd preflight:") {
				continue // the night's preflight: the fixed prompt alone, no repository
			}
			if strings.Contains(sys, "never edit them by hand") {
				t.Fatalf("%s request: the instructions are in the static system message", r.Role)
			}
			at := strings.Index(user, "shop/catalogue_*.py are generated")
			if with != (at >= 0) {
				t.Fatalf("%s request: instructions present = %v, want %v", r.Role, at >= 0, with)
			}
			if with && !(strings.Index(user, "# Repository") < at && at < strings.Index(user, "# Ticket ")) {
				t.Fatalf("%s request: the instructions are not between the repository header and the ticket", r.Role)
			}
		}
	}
	for _, role := range model.Roles {
		without, with := mean(shares[false][string(role)]), mean(shares[true][string(role)])
		t.Logf("%s: first-request cached share of later tickets: %.4f without AGENTS.md, %.4f with (one cache block: %.4f)", role, without, with, block[string(role)])
		// The cache holds whole 128-token blocks, so which ticket a role's first request
		// is (the workers race) moves a share by up to one block either way: that much is
		// resolution, not a loss. A block after the ticket would cost its whole size.
		if len(shares[true][string(role)]) != tickets-1 || with < without-block[string(role)] {
			t.Errorf("%s: cached share %.4f with AGENTS.md over %d tickets, want at least %.4f (without) less one cache block (%.4f)",
				role, with, len(shares[true][string(role)]), without, block[string(role)])
		}
	}
}

// cacheBlockShares is, per role, one 128-token cache block as a share of the smallest
// first request of that role among the tickets.
func cacheBlockShares(t *testing.T, st *store.Store, tickets int) map[string]float64 {
	t.Helper()
	smallest := map[string]int64{}
	for id := int64(1); id <= int64(tickets); id++ {
		calls, err := st.ModelCalls(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, c := range calls {
			if seen[c.Role] || c.ErrorClass != "" || c.PromptTokens == 0 {
				continue
			}
			seen[c.Role] = true
			if p, ok := smallest[c.Role]; !ok || c.PromptTokens < p {
				smallest[c.Role] = c.PromptTokens
			}
		}
	}
	out := map[string]float64{}
	for role, p := range smallest {
		out[role] = 128 / float64(p)
	}
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
