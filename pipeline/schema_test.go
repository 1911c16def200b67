package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/model"
)

// The cheap roles' answers outside their schema: each is sent back to the model with what
// is wrong, and what is kept is the accepted answer alone, in the schema's words.
func TestRoleAnswersOutsideTheSchema(t *testing.T) {
	const diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def double(x):\n-    return x + x + 1\n+    return x + x\n"
	blocker := `{"findings":[{"file":"calc.py","line":2,"severity":"Blocker","category":"correctness","finding":"wrong for floats","evidence":"return x + x"}]}`
	tests := []struct {
		name    string
		role    model.Role
		answers []string
		check   func(t *testing.T, a *attempt) string // "" when the result is right, else what is wrong
		asks    int                                   // requests expected; 0: at least two
	}{
		{"triage: a refused answer's fields are not kept", model.RoleTriage,
			[]string{`{"summary":"","acceptance_criteria":["from the refused answer"]}`, `{"summary":"double adds one"}`},
			func(t *testing.T, a *attempt) string {
				tri, err := triage(context.Background(), a.ask, a.jr)
				if err != nil || tri == nil || tri.Summary != "double adds one" || len(tri.AcceptanceCriteria) != 0 {
					return "triage = " + strings.TrimSpace(strings.Join([]string{errText(err), jsonText(tri)}, " ")) + `; want summary "double adds one" and no criteria`
				}
				return ""
			}, 0},
		{"checker: an answer without findings is asked again, not read as none", model.RoleChecker,
			[]string{`{"issues":[{"file":"calc.py","problem":"wrong for floats"}]}`, blocker},
			func(t *testing.T, a *attempt) string {
				rr, err := a.board.review(context.Background(), candidate{diff: diff, summary: "drop the + 1"})
				if err != nil || len(rr.findings) != 1 || rr.findings[0].Severity != "blocker" || rr.feedback == "" {
					return "review = " + jsonText(rr.findings) + " " + errText(err) + "; want the blocker of the second answer, sent back"
				}
				return ""
			}, 0},
		{"judge: verdict case and spaces, no unmet criteria of a refused answer", model.RoleJudge,
			[]string{`{"verdict":"maybe","unmet":["from the refused answer"],"reason":"unsure"}`, `{"verdict":" PASS ","reason":"meets the criteria"}`, `{"verdict":"fail","reason":"third"}`},
			func(t *testing.T, a *attempt) string {
				rr, err := a.board.judge(context.Background(), candidate{diff: diff, summary: "drop the + 1"}, func() string { return "" })
				if err != nil || rr.verdict == nil || rr.verdict.Verdict != "pass" || len(rr.verdict.Unmet) != 0 || rr.feedback != "" {
					return "verdict = " + jsonText(rr.verdict) + " " + errText(err) + `; want "pass" from the second answer, no unmet criteria`
				}
				return ""
			}, 0},
		{"judge: prose around the JSON object is read, not asked again", model.RoleJudge,
			[]string{"Here is my verdict:\n```json\n{\"verdict\": \"fail\", \"unmet\": [\"double(3) == 6\"], \"reason\": \"only 2 is checked\"}\n```\nI hope this helps."},
			func(t *testing.T, a *attempt) string {
				rr, err := a.board.judge(context.Background(), candidate{diff: diff, summary: "drop the + 1"}, func() string { return "" })
				if err != nil || rr.verdict == nil || rr.verdict.Verdict != "fail" || len(rr.verdict.Unmet) != 1 {
					return "verdict = " + jsonText(rr.verdict) + " " + errText(err) + `; want "fail" with its unmet criterion`
				}
				return ""
			}, 1},
		{"checker: a refusal is named as one in the error", model.RoleChecker,
			[]string{"refusal:I can't review this.", "refusal:I can't review this.", "refusal:I can't review this."},
			func(t *testing.T, a *attempt) string {
				_, err := a.board.review(context.Background(), candidate{diff: diff, summary: "drop the + 1"})
				if err == nil || !strings.Contains(err.Error(), `a refusal: "I can't review this."`) {
					return "review error = " + errText(err) + "; want it to name the refusal"
				}
				return ""
			}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &answersChatter{answers: tt.answers}
			a := newAttempt(&Runner{Models: c, Roles: map[model.Role]bool{tt.role: true}},
				Job{Dir: t.TempDir(), Ticket: Ticket{Title: "double is wrong", Body: "double(2) gives 5"}}, time.Time{})
			if bad := tt.check(t, a); bad != "" {
				t.Errorf("answers %q:\n%s", tt.answers, bad)
			}
			if tt.asks == 0 && len(c.sizes) < 2 || tt.asks > 0 && len(c.sizes) != tt.asks {
				t.Errorf("answers %q: %d request(s), want %d (0: the first answer sent back)", tt.answers, len(c.sizes), tt.asks)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "error: " + err.Error()
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
