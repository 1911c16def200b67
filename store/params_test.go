package store

import (
	"reflect"
	"regexp"
	"strconv"
	"testing"

	"github.com/ticketd/ticketd/store/storedriver"
)

// TestParamsMatchStatements: each params type gives as many arguments as its statement
// numbers placeholders in every engine, so a field added to one and not the other fails
// here instead of shifting every argument after it.
func TestParamsMatchStatements(t *testing.T) {
	forEachEngine(t, testParamsMatchStatements)
}

func testParamsMatchStatements(t *testing.T, e engine) {
	b := e.setup(t)
	statements := []struct {
		field  string
		params storedriver.Params
	}{
		{"Enqueue", storedriver.EnqueueParams{}},
		{"Heartbeat", storedriver.HeartbeatParams{}},
		{"Complete", storedriver.CompleteParams{}},
		{"CompleteEnded", storedriver.CompleteEndedParams{}},
		{"EndAttempt", storedriver.EndAttemptParams{}},
		{"FinishCancelled", storedriver.FinishCancelledParams{}},
		{"SaveTriage", storedriver.SaveTriageParams{}},
		{"Retext", storedriver.RetextParams{}},
		{"CancelQueued", storedriver.CancelQueuedParams{}},
		{"RequeueParked", storedriver.ToQueueParams{}},
		{"Requeue", storedriver.RequeueParams{}},
		{"Accept", storedriver.AcceptParams{}},
		{"AskHuman", storedriver.AskHumanParams{}},
		{"InsertQuestion", storedriver.InsertQuestionParams{}},
		{"AnswerQuestion", storedriver.AnswerQuestionParams{}},
		{"NeedBudget", storedriver.NeedBudgetParams{}},
		{"AddBudget", storedriver.AddBudgetParams{}},
		{"Answered", storedriver.ToQueueParams{}},
		{"RequeueNeedsInfo", storedriver.ToQueueParams{}},
		{"AppendEvent", storedriver.AppendEventParams{}},
		{"InsertModelCall", storedriver.InsertModelCallParams{}},
		{"InsertToolCall", storedriver.InsertToolCallParams{}},
		{"InsertReview", storedriver.InsertReviewParams{}},
		{"InsertEndpointEvent", storedriver.InsertEndpointEventParams{}},
		{"FinishRun", storedriver.FinishRunParams{}},
		{"SaveBaseline", storedriver.SaveBaselineParams{}},
		{"SaveArtifact", storedriver.SaveArtifactParams{}},
		{"InsertRequeue", storedriver.InsertRequeueParams{}},
		{"EscalateCrashed", storedriver.EscalateCrashedParams{}},
		{"InsertIntakeSkip", storedriver.InsertIntakeSkipParams{}},
		{"RecordEnvironment", storedriver.RecordEnvironmentParams{}},
	}
	sqlv := reflect.ValueOf(b.s.q).Elem()
	for _, st := range statements {
		f := sqlv.FieldByName(st.field)
		if !f.IsValid() {
			t.Errorf("SQL has no statement %s", st.field)
			continue
		}
		if f.String() == "" && st.field == "CompleteEnded" {
			continue // optional
		}
		if got, want := placeholders(f.String()), len(st.params.Args()); got != want {
			t.Errorf("%s numbers %d placeholders; %T gives %d arguments", st.field, got, st.params, want)
		}
	}
	if got, want := placeholders(b.s.q.AppendEventFromRow), len(storedriver.AppendEventParams{}.FromRowArgs()); got != want {
		t.Errorf("AppendEventFromRow numbers %d placeholders; FromRowArgs gives %d", got, want)
	}
}

var numbered = regexp.MustCompile(`[?$](\d+)`)
var bare = regexp.MustCompile(`\?(\D|$)`)

// placeholders is the highest numbered placeholder in query (?N, $N), or the count of bare
// ? when it numbers none.
func placeholders(query string) int {
	high := 0
	for _, m := range numbered.FindAllStringSubmatch(query, -1) {
		n, _ := strconv.Atoi(m[1])
		high = max(high, n)
	}
	if high == 0 {
		high = len(bare.FindAllString(query, -1))
	}
	return high
}
