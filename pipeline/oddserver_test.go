package pipeline

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/pipeline/model"
)

// An attempt through the real client against a server that answers in the odd shapes
// compatible servers send: tool calls with one id made from the tool's name, arguments as
// an object, a submit fenced in ```json, content beside tool calls, and a usage block whose
// cost is a string. The fix lands, every result goes back under its own call, and the
// reported usage is counted as reported.
func TestAttemptOverAnOddServer(t *testing.T) {
	answers := []string{
		`{"role":"assistant","content":"Reading both.","tool_calls":[` +
			`{"id":"call-read_files","type":"function","function":{"name":"read_files","arguments":{"paths":["calc.py"]}}},` +
			`{"id":"call-read_files","type":"function","function":{"name":"read_files","arguments":{"paths":["test_calc.py"]}}}]}`,
		`{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"call-edit_file","type":"function","function":{"name":"edit_file","arguments":{"path":"calc.py","old_text":"return x + x + 1","new_text":"return x + x"}}},` +
			`{"id":"call-submit","function":{"name":"submit","arguments":"` + "```json\\n{\\\"summary\\\": \\\"drop the + 1\\\"}\\n```" + `"}}]}`,
	}
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, body)
		mu.Unlock()
		if n >= len(answers) {
			http.Error(w, "no more answers scripted", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":`+answers[n]+
			`,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1000,"completion_tokens":10,"total_tokens":1010,"cost":"0.01"}}`)
	}))
	t.Cleanup(srv.Close)
	client, err := model.New(model.Config{Endpoints: map[string]model.Endpoint{"odd": {BaseURL: srv.URL}},
		Roles: map[model.Role]model.RoleConfig{
			model.RoleTriage: {Endpoint: "odd", Model: "gpt-4.1-mini"}, model.RoleMaker: {Endpoint: "odd", Model: "gpt-4.1-mini"},
			model.RoleChecker: {Endpoint: "odd", Model: "gpt-4.1-mini"}, model.RoleJudge: {Endpoint: "odd", Model: "gpt-4.1-mini"},
		}, Retry: model.RetryConfig{MaxRetries: -1}}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r, job := setupLoop(t, &fakeModel{})
	r.Models = client
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed || out.Summary != "drop the + 1" {
		t.Fatalf("status %s (%s), summary %q; want fixed with the fenced summary\n%s", out.Status, out.Reason, out.Summary, strings.Join(out.History, "\n"))
	}
	if out.Tokens != 2*1010 {
		t.Errorf("tokens %d, want the reported 2 × 1010", out.Tokens)
	}
	// The second request replays the first answer's calls and results under distinct ids.
	msgs := bodies[1]["messages"].([]any)
	var callIDs, resultIDs []string
	for _, m := range msgs {
		mm := m.(map[string]any)
		for _, c := range asSlice(mm["tool_calls"]) {
			callIDs = append(callIDs, c.(map[string]any)["id"].(string))
		}
		if mm["role"] == "tool" {
			resultIDs = append(resultIDs, mm["tool_call_id"].(string))
			if !strings.Contains(mm["content"].(string), "===") {
				t.Errorf("tool result %v: want a file read", mm)
			}
		}
	}
	if len(callIDs) != 2 || callIDs[0] == callIDs[1] || strings.Join(callIDs, ",") != strings.Join(resultIDs, ",") {
		t.Errorf("replayed call ids %v and result ids %v; want two distinct ids, each answered in order", callIDs, resultIDs)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// A refusal by the provider's content filter is the ticket's trouble (its text set the
// filter off), not the endpoint's: the attempt fails with the reason and no endpoint fault,
// so the night does not take it for a systemic failure, while a refused parameter is one.
func TestContentFilterIsTheTickets(t *testing.T) {
	tests := []struct {
		name, body    string
		endpointFault bool
		reason        string
	}{
		{"azure content filter", `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation"}}}`,
			false, "content filter refused the request"},
		{"unknown parameter", `{"error":{"message":"Unrecognized request argument supplied: prompt_cache_key","type":"invalid_request_error","code":null}}`,
			true, "Unrecognized request argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			client, err := model.New(model.Config{Endpoints: map[string]model.Endpoint{"az": {BaseURL: srv.URL}},
				Roles: map[model.Role]model.RoleConfig{
					model.RoleTriage: {Endpoint: "az", Model: "gpt-4.1-mini"}, model.RoleMaker: {Endpoint: "az", Model: "gpt-4.1-mini"},
					model.RoleChecker: {Endpoint: "az", Model: "gpt-4.1-mini"}, model.RoleJudge: {Endpoint: "az", Model: "gpt-4.1-mini"},
				}}, nil, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			r, job := setupLoop(t, &fakeModel{})
			r.Models = client
			out := r.Run(context.Background(), job)
			if out.Status != StatusFailed || (out.EndpointFault != nil) != tt.endpointFault || !strings.Contains(out.Reason, tt.reason) {
				t.Errorf("answer %s:\nstatus %s (%s), endpoint fault %v; want failed naming %q, endpoint fault %v",
					tt.body, out.Status, out.Reason, out.EndpointFault != nil, tt.reason, tt.endpointFault)
			}
		})
	}
}
