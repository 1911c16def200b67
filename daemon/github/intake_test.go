package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
)

const testRepo = "acme/app"

type bundle struct {
	fake   *githubfake.Server
	store  *store.Store
	client *Client
	intake *Intake
}

func setup(t *testing.T) bundle {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := githubfake.New(t)
	c, err := NewClient(ClientOptions{BaseURL: f.URL(), Token: githubfake.Token, Reserve: 100})
	if err != nil {
		t.Fatal(err)
	}
	in := &Intake{Client: c, Store: st, Repos: []Repo{{Name: testRepo, Local: "app", Label: "ticketd"}},
		Allow: []string{"trusted-outsider"}, Priorities: map[string]int{"urgent": 10},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return bundle{fake: f, store: st, client: c, intake: in}
}

func (b bundle) tickets(t *testing.T) map[string]store.Summary {
	t.Helper()
	all, err := b.store.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Summary{}
	for _, s := range all {
		out[s.ExternalID] = s
	}
	return out
}

func TestScanLabelFiltering(t *testing.T) {
	b := setup(t)
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "labelled", Labels: []string{"ticketd", "Urgent"}, Author: "owner"})
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "other label", Labels: []string{"bug"}, Author: "owner"})
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "a pull request", Labels: []string{"ticketd"}, Author: "owner", PullRequest: true})
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "closed", Labels: []string{"ticketd"}, Author: "owner", State: "closed"})
	b.fake.AddIssue("acme/other", githubfake.Issue{Title: "other repo", Labels: []string{"ticketd"}, Author: "owner"})
	rep, err := b.intake.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := b.tickets(t)
	tests := []struct {
		ext  string
		want bool
	}{{"acme/app#1", true}, {"acme/app#2", false}, {"acme/app#3", false}, {"acme/app#4", false}, {"acme/other#1", false}}
	for _, tt := range tests {
		_, ok := got[tt.ext]
		if ok != tt.want {
			t.Errorf("issue %s: enqueued = %v, want %v", tt.ext, ok, tt.want)
		}
	}
	tk := got["acme/app#1"]
	if tk.Title != "labelled" || tk.Repo != "app" || tk.Priority != 10 || tk.Source != Source {
		t.Errorf("ticket = title %q repo %q priority %d source %q, want labelled/app/10/github", tk.Title, tk.Repo, tk.Priority, tk.Source)
	}
	if rep.Listed != 1 || len(rep.Added) != 1 {
		t.Errorf("report = %+v, want listed 1 added 1", rep)
	}
	// A second scan adds nothing twice.
	rep, err = b.intake.Scan(context.Background())
	if err != nil || len(rep.Added) != 0 || len(b.tickets(t)) != 1 {
		t.Errorf("rescan: added %v, tickets %d, err %v; want nothing new", rep.Added, len(b.tickets(t)), err)
	}
}

func TestScanPaginates(t *testing.T) {
	b := setup(t)
	for i := range 230 {
		b.fake.AddIssue(testRepo, githubfake.Issue{Title: fmt.Sprintf("issue %d", i), Labels: []string{"ticketd"}, Author: "owner"})
	}
	rep, err := b.intake.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, pages := len(b.tickets(t)), b.fake.Count("GET", "/repos/acme/app/issues?"); got != 230 || pages != 3 {
		t.Errorf("230 issues at 100 a page: got %d tickets in %d page requests, want 230 in 3 (report %+v)", got, pages, rep.Listed)
	}
}

func TestScanUnchangedIsNotModified(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "one", Labels: []string{"ticketd"}, Author: "owner"})
	if _, err := b.intake.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	before := b.fake.RateRemaining
	rep, err := b.intake.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second scan: unchanged pages %d, 304s %d, rate %d -> %d", rep.Unchanged, b.fake.NotModified, before, b.fake.RateRemaining)
	if got := b.client.Rate(); got.Limit != 5000 || got.Remaining != before {
		t.Errorf("rate seen after a 304 = %d/%d, want %d/5000 (the 304's headers)", got.Remaining, got.Limit, before)
	}
	if rep.Unchanged != 1 || b.fake.NotModified != 1 || b.fake.RateRemaining != before || b.client.NotModified() != 1 {
		t.Errorf("unchanged listing: got unchanged=%d fake 304s=%d client 304s=%d rate %d->%d; want 1, 1, 1 and no rate spent",
			rep.Unchanged, b.fake.NotModified, b.client.NotModified(), before, b.fake.RateRemaining)
	}
	// Negative control: a change is a 200 again and the new issue is seen.
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "two", Labels: []string{"ticketd"}, Author: "owner"})
	rep, err = b.intake.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Unchanged != 0 || len(rep.Added) != 1 {
		t.Errorf("changed listing: unchanged=%d added=%v; want 0 and one ticket", rep.Unchanged, rep.Added)
	}
}

func TestAuthorGate(t *testing.T) {
	b := setup(t)
	b.fake.Perms[testRepo+"\x00writer"] = "write"
	b.fake.Perms[testRepo+"\x00reader"] = "read"
	b.fake.Perms[testRepo+"\x00admin"] = "admin"
	tests := []struct {
		author, assoc string
		want          bool
	}{
		{"owner", "OWNER", true},
		{"writer", "COLLABORATOR", true},
		{"admin", "MEMBER", true},
		{"reader", "COLLABORATOR", false},
		{"stranger", "NONE", false},
		{"contrib", "CONTRIBUTOR", false},
		{"trusted-outsider", "NONE", true},
		{"ghost", "MEMBER", false}, // not a collaborator: permission answers 404
	}
	for _, tt := range tests {
		b.fake.AddIssue(testRepo, githubfake.Issue{Title: "by " + tt.author, Labels: []string{"ticketd"}, Author: tt.author, Assoc: tt.assoc})
	}
	rep, err := b.intake.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := b.tickets(t)
	for i, tt := range tests {
		_, ok := got[ExternalID(testRepo, i+1)]
		if ok != tt.want {
			t.Errorf("author %s (%s): enqueued = %v, want %v", tt.author, tt.assoc, ok, tt.want)
		}
	}
	if len(rep.Ignored) != 4 {
		t.Errorf("ignored = %v, want 4", rep.Ignored)
	}
	// Only members and collaborators cost a permission request; the cache answers a rescan.
	if n := b.fake.Count("GET", "/repos/acme/app/collaborators/"); n != 4 {
		t.Errorf("permission requests = %d, want 4 (writer, admin, reader, ghost)", n)
	}
	if _, err := b.intake.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := b.fake.Count("GET", "/repos/acme/app/collaborators/"); n != 4 {
		t.Errorf("permission requests after rescan = %d, want still 4 (cached)", n)
	}
}

func TestSpamCostsNoRequests(t *testing.T) {
	b := setup(t)
	for i := range 50 {
		b.fake.AddIssue(testRepo, githubfake.Issue{Title: fmt.Sprintf("spam %d", i), Labels: []string{"ticketd"}, Author: "spammer", Assoc: "NONE"})
	}
	if _, err := b.intake.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, reqs := len(b.tickets(t)), len(b.fake.Requests); n != 0 || reqs != 1 {
		t.Errorf("50 spam issues: %d tickets, %d requests; want 0 tickets from 1 listing request", n, reqs)
	}
}

func TestClosedOrUnlabelledCancels(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	running := b.fake.AddIssue(testRepo, githubfake.Issue{Title: "will close", Labels: []string{"ticketd"}, Author: "owner"})
	queued := b.fake.AddIssue(testRepo, githubfake.Issue{Title: "will lose its label", Labels: []string{"ticketd"}, Author: "owner"})
	kept := b.fake.AddIssue(testRepo, githubfake.Issue{Title: "stays", Labels: []string{"ticketd"}, Author: "owner"})
	if _, err := b.intake.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	lease, err := b.store.Claim(ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if lease.Ticket.ExternalID != "acme/app#1" {
		t.Fatalf("claimed %s, want acme/app#1", lease.Ticket.ExternalID)
	}
	// Watch sees nothing to do while the issue is open: its reads are free 304s after the first.
	for range 2 {
		if rep, err := b.intake.Watch(ctx); err != nil || len(rep.Cancelled) != 0 {
			t.Fatalf("watch of an open issue: cancelled %v, err %v", rep.Cancelled, err)
		}
	}
	if b.fake.NotModified != 1 {
		t.Errorf("second watch read: %d 304s, want 1", b.fake.NotModified)
	}
	b.fake.Edit(func() {
		running.State = "closed"
		queued.Labels = []string{"bug"}
	})
	rep, err := b.intake.Watch(ctx)
	if err != nil || !slices.Equal(rep.Cancelled, []int64{lease.Ticket.ID}) {
		t.Fatalf("watch after close: cancelled %v err %v, want [%d]", rep.Cancelled, err, lease.Ticket.ID)
	}
	// The worker learns it at its next heartbeat.
	cancelReq, err := b.store.Heartbeat(ctx, lease.Ticket.ID, lease.Token, time.Minute)
	if err != nil || !cancelReq {
		t.Errorf("heartbeat after issue closed: cancel requested %v err %v, want true", cancelReq, err)
	}
	// The scan cancels the queued ticket whose label was removed; the open one stays.
	if _, err := b.intake.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	got := b.tickets(t)
	states := map[string]store.State{"acme/app#1": store.StateRunning, "acme/app#2": store.StateCancelled, "acme/app#3": store.StateQueued}
	for ext, want := range states {
		if got[ext].State != want {
			t.Errorf("%s: state %s, want %s (reason %q)", ext, got[ext].State, want, got[ext].Reason)
		}
	}
	if r := got["acme/app#2"].Reason; r != `label "ticketd" was removed from issue acme/app#2` {
		t.Errorf("reason = %q", r)
	}
	_ = kept
}

func TestScanRespectsRateReserve(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	for i := range 150 {
		b.fake.AddIssue(testRepo, githubfake.Issue{Title: fmt.Sprintf("i%d", i), Labels: []string{"ticketd"}, Author: "owner"})
	}
	b.fake.RateRemaining = 102 // after two pages: 100 left, not below the reserve of 100
	if _, err := b.intake.Scan(ctx); err != nil {
		t.Fatalf("at the reserve: %v", err)
	}
	b.fake.RateRemaining = 50
	before := len(b.fake.Requests)
	_, err := b.intake.Scan(ctx)
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("below the reserve: err %v, want ErrRateLimited", err)
	}
	if n := len(b.fake.Requests) - before; n != 1 {
		t.Errorf("below the reserve: %d requests, want 1 (the page that reported it)", n)
	}
	_, err = b.intake.Scan(ctx)
	if !errors.Is(err, ErrRateLimited) || len(b.fake.Requests)-before != 1 {
		t.Errorf("paused: err %v, requests %d; want ErrRateLimited and no request", err, len(b.fake.Requests)-before)
	}
}

func TestParseExternalID(t *testing.T) {
	tests := []struct {
		in   string
		repo string
		n    int
		ok   bool
	}{
		{"acme/app#12", "acme/app", 12, true},
		{"acme/app#0", "", 0, false},
		{"acme/app", "", 0, false},
		{"acme#3", "", 0, false},
		{"a/b/c#3", "", 0, false},
		{"acme/app#x", "", 0, false},
	}
	for _, tt := range tests {
		repo, n, err := ParseExternalID(tt.in)
		if (err == nil) != tt.ok || repo != tt.repo || n != tt.n {
			t.Errorf("ParseExternalID(%q) = %q, %d, %v; want %q, %d, ok=%v", tt.in, repo, n, err, tt.repo, tt.n, tt.ok)
		}
	}
}

// TestScanFullLastPageGrows: the last page was full (100 issues, no next page) and an issue
// labelled since lands on a new page 2. Page 1's items did not change, so GitHub answers it
// 304, and its 304 carries no Link header: the remembered "no next page" must not hide the
// new issue.
func TestScanFullLastPageGrows(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	for i := range 100 {
		b.fake.AddIssue(testRepo, githubfake.Issue{Title: fmt.Sprintf("issue %d", i), Labels: []string{"ticketd"}, Author: "owner"})
	}
	if _, err := b.intake.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "issue 100, on page 2", Labels: []string{"ticketd"}, Author: "owner"})
	rep, err := b.intake.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.tickets(t)["acme/app#101"]; !ok || rep.Listed != 101 {
		t.Errorf("after a 101st issue on a new page: listed %d, acme/app#101 enqueued %v; want 101 and true (requests %v)",
			rep.Listed, ok, b.fake.Requests[len(b.fake.Requests)-2:])
	}
	// A page that is not full still costs nothing when unchanged.
	before := b.fake.NotModified
	if _, err := b.intake.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.fake.NotModified - before; got != 2 {
		t.Errorf("unchanged listing of a full page and a partial one: %d 304s, want 2", got)
	}
}
