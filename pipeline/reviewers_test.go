package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
)

func TestReviewerApplies(t *testing.T) {
	diff := func(path string, added ...string) string {
		d := fmt.Sprintf("diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1,1 +1,1 @@\n", path, path, path, path)
		for _, a := range added {
			d += "+" + a + "\n"
		}
		return d
	}
	tests := []struct {
		name           string
		angle          string
		paths, touches []string
		diff           string
		want           bool
	}{
		{"correctness always", AngleCorrectness, nil, nil, diff("a.py", "x = 1"), true},
		{"performance without patterns: every change", AnglePerformance, nil, nil, diff("a.py", "x = 1"), true},
		{"security default: a plain change is skipped", AngleSecurity, nil, nil, diff("calc.py", "return x + x"), false},
		{"security default: shell", AngleSecurity, nil, nil, diff("run.py", "subprocess.run(cmd, shell=True)"), true},
		{"security default: a path join", AngleSecurity, nil, nil, diff("files.py", "full = os.path.join(root, name)"), true},
		{"security default: SQL", AngleSecurity, nil, nil, diff("db.py", `cur.execute("SELECT * FROM t WHERE id = " + id)`), true},
		{"security default: pickle", AngleSecurity, nil, nil, diff("cache.py", "obj = pickle.loads(data)"), true},
		{"security default: a removed auth check counts", AngleSecurity, nil, nil, "+++ b/views.py\n-    if not user.is_admin:\n", true},
		{"glob ** across folders", AngleSecurity, []string{"app/**/auth/*.py"}, nil, diff("app/web/auth/login.py", "x"), true},
		{"glob ** zero folders", AngleSecurity, []string{"app/**/auth/*.py"}, nil, diff("app/auth/login.py", "x"), true},
		{"glob does not cross a folder with *", AngleSecurity, []string{"app/*.py"}, nil, diff("app/web/x.py", "x"), false},
		{"a bare name matches at any depth", AnglePerformance, []string{"*.sql"}, nil, diff("db/migrations/001.sql", "x"), true},
		{"paths given: others skipped", AnglePerformance, []string{"*.sql"}, nil, diff("calc.py", "for x in xs:"), false},
		{"touches given", AnglePerformance, nil, []string{`\bsorted\(`}, diff("calc.py", "ys = sorted(xs)"), true},
		{"touches ignore the file header", AnglePerformance, nil, []string{`sorted`}, diff("sorted.py", "x = 1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReviewer(tt.angle, tt.paths, tt.touches)
			if err != nil {
				t.Fatal(err)
			}
			if got, why := r.Applies(changedFiles(tt.diff), tt.diff); got != tt.want {
				t.Errorf("Applies(%q) = %v (%s), want %v", tt.diff, got, why, tt.want)
			}
		})
	}
	for _, bad := range []struct {
		angle          string
		paths, touches []string
		want           string
	}{
		{"style", nil, nil, "want one of correctness, security, performance"},
		{AngleCorrectness, []string{"*.py"}, nil, "takes no paths"},
		{AngleSecurity, []string{"[a"}, nil, "bad glob"},
		{AngleSecurity, nil, []string{"(unclosed"}, "not a regular expression"},
	} {
		if _, err := NewReviewer(bad.angle, bad.paths, bad.touches); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("NewReviewer(%q, %q, %q) = %v, want an error saying %q", bad.angle, bad.paths, bad.touches, err, bad.want)
		}
	}
}

// reviewModel is a test double answering checker requests per angle with fixed findings and
// arbiter requests with fixed decisions; it records the requests and whether any other
// request started before the first one answered.
type reviewModel struct {
	mu        sync.Mutex
	findings  map[string]string // angle -> findings JSON
	decisions string
	requests  []model.Request
	angles    []string
	inFlight  int
	overlap   bool // a request started while the first was still in flight
}

func (m *reviewModel) Chat(_ context.Context, req model.Request) (model.Response, error) {
	m.mu.Lock()
	first := len(m.requests) == 0
	if !first && m.inFlight > 0 && len(m.requests) == 1 {
		m.overlap = true
	}
	m.requests = append(m.requests, req)
	m.inFlight++
	angle := AngleCorrectness
	for _, msg := range req.Messages[2:] {
		if rest, ok := strings.CutPrefix(msg.Content, "# Review angle: "); ok {
			angle, _, _ = strings.Cut(rest, "\n")
		}
	}
	m.angles = append(m.angles, angle)
	m.mu.Unlock()
	defer func() { m.mu.Lock(); m.inFlight--; m.mu.Unlock() }()
	content := `{"findings": []}`
	switch req.Role {
	case model.RoleChecker:
		if f, ok := m.findings[angle]; ok {
			content = f
		}
	case model.RoleArbiter:
		content = m.decisions
	}
	return model.Response{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content}}, nil
}

const reviewDiff = `diff --git a/files.py b/files.py
--- a/files.py
+++ b/files.py
@@ -1,2 +1,3 @@
 def path_for(root, name):
-    return root + "/" + name
+    full = os.path.join(root, name)
+    return full
`

// TestReviewersShareThePrefix: correctness goes first and alone; the other reviewers then
// run on its request's messages as their prefix, each adding only its angle at the end.
func TestReviewersShareThePrefix(t *testing.T) {
	m := &reviewModel{}
	sec, _ := NewReviewer(AngleSecurity, nil, nil)
	perf, _ := NewReviewer(AnglePerformance, nil, nil)
	skipped, _ := NewReviewer(AnglePerformance, []string{"*.sql"}, nil)
	a := newAttempt(&Runner{Models: m, Roles: map[model.Role]bool{model.RoleChecker: true}, Reviewers: append(DefaultReviewers(), perf, sec), Logger: discardLogger()},
		Job{Ticket: Ticket{ID: 1, Attempt: 1, Title: "paths", Repo: "app"}, RepoMap: "files.py\n"}, time.Time{})
	if _, _, err := a.board.runReviewers(context.Background(), 1, reviewDiff, "\n```diff\n"+reviewDiff+"```\n"); err != nil {
		t.Fatal(err)
	}
	if len(m.requests) != 3 || m.angles[0] != AngleCorrectness {
		t.Fatalf("requests by angle %v, want correctness first, then the other two", m.angles)
	}
	if m.overlap {
		t.Error("another reviewer started before correctness answered: the shared prefix was not written first")
	}
	prefix := m.requests[0].Messages
	for i := 1; i < 3; i++ {
		msgs := m.requests[i].Messages
		if len(msgs) != len(prefix)+1 || !reflect.DeepEqual(msgs[:len(prefix)], prefix) {
			t.Errorf("%s request does not extend the correctness request by one message", m.angles[i])
		}
		if !strings.HasPrefix(msgs[len(msgs)-1].Content, "# Review angle: "+m.angles[i]) {
			t.Errorf("%s request ends with %q", m.angles[i], clip(msgs[len(msgs)-1].Content, 60))
		}
	}
	// Paths that the change does not meet keep a reviewer out of the round.
	m2 := &reviewModel{}
	a.ask.models, a.board.reviewers = m2, append(DefaultReviewers(), skipped)
	if _, _, err := a.board.runReviewers(context.Background(), 1, reviewDiff, "diff"); err != nil {
		t.Fatal(err)
	}
	if len(m2.requests) != 1 {
		t.Errorf("%d requests, want only correctness: performance is limited to *.sql", len(m2.requests))
	}
}

// TestArbiter: findings of two reviewers on the same lines go to one arbiter call, whose
// decision drops the loser or keeps both, marked; findings elsewhere are left alone.
func TestArbiter(t *testing.T) {
	correctness := `{"findings": [{"file": "files.py", "line": 2, "severity": "blocker", "category": "correctness", "finding": "join keeps a traversal", "evidence": "full = os.path.join(root, name)"},
		{"file": "files.py", "line": 3, "severity": "minor", "category": "style", "finding": "name it path", "evidence": "return full"}]}`
	security := `{"findings": [{"file": "files.py", "line": 2, "severity": "minor", "category": "security", "finding": "join is safe here", "evidence": "full = os.path.join(root, name)"}]}`
	tests := []struct {
		name, decisions string
		judge           bool
		wantKept        int
		wantDecision    string
		wantMark        string
		wantCalls       int
	}{
		{"A holds: B dropped", `{"decisions": [{"pair": 1, "decision": "A", "reason": "the join does not stop ../"}]}`, true, 2, "A", "kept over the security reviewer's finding at files.py:2", 1},
		{"B holds: A dropped", `{"decisions": [{"pair": 1, "decision": "B", "reason": "root is trusted"}]}`, true, 2, "B", "kept over the correctness reviewer's finding at files.py:2", 1},
		{"both kept, marked", `{"decisions": [{"pair": 1, "decision": "both", "reason": "they do not exclude each other"}]}`, true, 3, "both", "contested by the", 1},
		{"no usable answer: both kept", `{"verdict": "pass"}`, true, 3, "both", "the arbiter gave no usable answer", 1 + maxRoleRetries},
		{"no judge role: no call, both kept", ``, false, 3, "both", "no arbiter", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &reviewModel{findings: map[string]string{AngleCorrectness: correctness, AngleSecurity: security}, decisions: tt.decisions}
			sec, _ := NewReviewer(AngleSecurity, nil, nil)
			roles := map[model.Role]bool{model.RoleChecker: true, model.RoleJudge: tt.judge}
			a := newAttempt(&Runner{Models: m, Roles: roles, Reviewers: append(DefaultReviewers(), sec), Logger: discardLogger()},
				Job{Ticket: Ticket{ID: 1, Attempt: 1, Title: "paths", Repo: "app"}, Dir: t.TempDir()}, time.Time{})
			kept, dropped, err := a.board.runReviewers(context.Background(), 1, reviewDiff, "diff")
			if err != nil || dropped != 0 {
				t.Fatalf("err %v, dropped %d", err, dropped)
			}
			arbiterCalls := 0
			for _, r := range m.requests {
				if r.Role == model.RoleArbiter {
					arbiterCalls++
				}
			}
			if arbiterCalls != tt.wantCalls || len(a.board.arbitrations) != 1 || a.board.arbitrations[0].Decision != tt.wantDecision {
				t.Fatalf("%d arbiter calls, arbitrations %+v; want %d call(s) deciding %s", arbiterCalls, a.board.arbitrations, tt.wantCalls, tt.wantDecision)
			}
			if len(kept) != tt.wantKept {
				t.Fatalf("kept %d findings %+v, want %d", len(kept), kept, tt.wantKept)
			}
			marked := 0
			for _, f := range kept {
				if strings.Contains(f.Arbiter, tt.wantMark) {
					marked++
				}
				if f.Evidence == "return full" && f.Arbiter != "" {
					t.Errorf("a finding on other lines was arbitrated: %+v", f)
				}
				if f.Reviewer == "" {
					t.Errorf("finding without its reviewer: %+v", f)
				}
			}
			if marked == 0 {
				t.Errorf("no kept finding carries %q: %+v", tt.wantMark, kept)
			}
		})
	}
}

// TestReviewersDisagreeEndToEnd runs a whole attempt against the scripted model: the checker
// blocks, the security reviewer says the opposite on the same line, one arbiter call decides
// for the blocker, the maker answers it, and round 2 asks only the reviewer that still has a
// finding to confirm.
func TestReviewersDisagreeEndToEnd(t *testing.T) {
	r, job, rec := setupAttempt(t, scriptedmodel.Case{CheckerBlocksOnce: true, ReviewersDisagree: true})
	sec, err := NewReviewer(AngleSecurity, []string{"*.py"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Reviewers = append(DefaultReviewers(), sec)
	job.Budget.MaxSteps = 20
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed {
		t.Fatalf("status %s (%s)\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	by := map[model.Role]int{}
	for _, c := range rec.model {
		by[c.Role]++
	}
	// Round 1: correctness + security; round 2: correctness alone (security's finding lost).
	if by[model.RoleArbiter] != 1 || by[model.RoleChecker] != 3 {
		t.Errorf("arbiter calls %d, checker calls %d; want 1 and 3", by[model.RoleArbiter], by[model.RoleChecker])
	}
	if len(out.Arbitrations) != 1 || out.Arbitrations[0].Decision != "A" || out.Arbitrations[0].A.Reviewer != AngleCorrectness || out.Arbitrations[0].B.Reviewer != AngleSecurity {
		t.Errorf("arbitrations %+v, want one deciding for the correctness blocker", out.Arbitrations)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// A reviewer's paths use the glob of testpaths (discover.GlobRegexp): a class starting with
// "]" is one, which path.Match accepts and the old translator made a regular expression
// that did not compile; a pattern without "/" still matches at any depth.
func TestReviewerPathsGlob(t *testing.T) {
	r, err := NewReviewer(AngleSecurity, []string{"[]]*.py", "/api/**"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{"]x.py": true, "pkg/]x.py": true, "x.py": false, "api/v1/h.py": true, "pkg/api/h.py": false} {
		if got, _ := r.Applies([]string{p}, ""); got != want {
			t.Errorf("Applies(%s) = %v; want %v", p, got, want)
		}
	}
}
