package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// rawRequest is a triage request whose system message is pad followed by the role line,
// so the pad decides where two requests' canonical prompts diverge.
func rawRequest(t *testing.T, model, key, pad, user string) []byte {
	t.Helper()
	body := map[string]any{
		"model": model,
		"messages": []map[string]string{
			{"role": "system", "content": pad + "\nticketd role: triage"},
			{"role": "user", "content": "empty list " + user},
		},
	}
	if key != "" {
		body["prompt_cache_key"] = key
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func canonicalOf(t *testing.T, body []byte) []byte {
	t.Helper()
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return canonicalPrompt(req.Tools, req.Messages)
}

// post sends a raw body and decodes the answer's usage or error.
func post(t *testing.T, url string, body []byte) (int, usage, string, http.Header) {
	t.Helper()
	resp, err := http.Post(url+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Usage usage     `json:"usage"`
		Error *apiError `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("answer %s is not JSON: %v", raw, err)
	}
	msg := ""
	if out.Error != nil {
		msg = out.Error.Message
	}
	return resp.StatusCode, out.Usage, msg, resp.Header
}

func TestPrefixCache(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 1, 22, 0, 0, 0, time.UTC))
	b := setup(t, []Case{{Match: "empty list", Patch: readTestdata(t, "stats/fix.patch")}}, Options{Now: clock.Now})

	// Size the pad so the two requests share exactly 12000 bytes = 3000 tokens.
	probeA, probeB := rawRequest(t, "m", "k", "", "AAAA"), rawRequest(t, "m", "k", "", "BBBB")
	pad := strings.Repeat("p", 12000-commonPrefix(canonicalOf(t, probeA), canonicalOf(t, probeB)))
	shareA, shareB := rawRequest(t, "m", "k", pad, "AAAA"), rawRequest(t, "m", "k", pad, "BBBB")
	if n := commonPrefix(canonicalOf(t, shareA), canonicalOf(t, shareB)); n != 12000 {
		t.Fatalf("test setup: shared prefix is %d bytes, want 12000", n)
	}
	firstByte := rawRequest(t, "m", "k", "q"+pad[1:], "AAAA")
	small := rawRequest(t, "m", "small", strings.Repeat("s", 3900), "x") // ~1000 tokens
	exact := rawRequest(t, "m", "exact", pad, "AAAA")

	steps := []struct {
		name    string
		advance time.Duration
		body    []byte
		want    int
	}{
		{"first request writes, reads nothing", 0, shareA, 0},
		{"3000-token shared prefix", 0, shareB, 2944},
		{"changed first byte", 0, firstByte, 0},
		{"same body, other prompt_cache_key", 0, rawRequest(t, "m", "other", pad, "AAAA"), 0},
		{"same body, other model", 0, rawRequest(t, "m2", "k", pad, "AAAA"), 0},
		{"below 1024 tokens: first", 0, small, 0},
		{"below 1024 tokens: identical repeat", 0, small, 0},
		{"exact repeat: first", 0, exact, 0},
		{"exact repeat: whole prompt in 128-token steps", 0, exact, estimateTokens(len(canonicalOf(t, exact))) / 128 * 128},
		{"4 minutes idle: still cached", 4 * time.Minute, shareA, 2944},
		{"5 minutes idle: still cached (TTL is inclusive)", 5 * time.Minute, shareB, 2944},
		{"5m01s idle: expired", 5*time.Minute + time.Second, shareA, 0},
	}
	for _, s := range steps {
		clock.Advance(s.advance)
		status, u, msg, _ := post(t, b.url, s.body)
		if status != 200 || u.PromptTokensDetails.CachedTokens != s.want {
			t.Errorf("%s: status %d %s, prompt %d tokens, cached %d; want cached %d",
				s.name, status, msg, u.PromptTokens, u.PromptTokensDetails.CachedTokens, s.want)
		}
	}
	recs := b.srv.Requests()
	if len(recs) != len(steps) || recs[1].Usage.CachedTokens != 2944 || recs[1].PromptCacheKey != "k" {
		t.Errorf("recorded %d requests, second %+v; want %d and cached 2944 under key k", len(recs), recs[1].Usage, len(steps))
	}
}

func TestFaultsAreDeterministicUnderASeed(t *testing.T) {
	patch := readTestdata(t, "stats/fix.patch")
	faults := Faults{RateLimitRate: 0.2, ServerErrorRate: 0.1, RetryAfter: 1500 * time.Millisecond}
	run := func(seed int64) (statuses []int, headers []string) {
		b := setup(t, []Case{{Match: "empty list", Patch: patch}}, Options{Seed: seed, Faults: faults})
		for i := range 200 {
			// Every fifth body repeats the previous one, as a client's retry would.
			body := rawRequest(t, "m", "", "", strings.Repeat("x", i-i%5/4))
			status, _, _, h := post(t, b.url, body)
			statuses = append(statuses, status)
			if status == http.StatusTooManyRequests {
				headers = append(headers, h.Get("Retry-After")+"/"+h.Get("retry-after-ms"))
			}
		}
		return statuses, headers
	}
	a, ha := run(7)
	again, _ := run(7)
	other, _ := run(8)
	count := map[int]int{}
	for _, s := range a {
		count[s]++
	}
	if !equalInts(a, again) {
		t.Errorf("seed 7 twice gave different statuses:\n%v\n%v", a, again)
	}
	if equalInts(a, other) {
		t.Errorf("seeds 7 and 8 gave the same 200 statuses")
	}
	// Binomial(200, 0.2) and (200, 0.1): these bounds are about 4 standard deviations wide.
	if count[429] < 18 || count[429] > 62 || count[500] < 5 || count[500] > 38 || count[200]+count[429]+count[500] != 200 {
		t.Errorf("statuses %v over 200 requests; want about 40 429s and 20 500s", count)
	}
	for _, h := range ha {
		if h != "2/1500" {
			t.Errorf("429 headers Retry-After/retry-after-ms = %q, want 2/1500", h)
			break
		}
	}
}

func TestRoleFaults(t *testing.T) {
	b := setup(t, []Case{{Match: "empty list", Patch: readTestdata(t, "stats/fix.patch")}},
		Options{RoleFaults: map[string]Faults{"checker": {ServerErrorRate: 1}}})
	for _, role := range []string{"triage", "checker", "judge", "checker"} {
		body := []byte(`{"model":"m","messages":[{"role":"system","content":"ticketd role: ` + role + `"},{"role":"user","content":"empty list"}]}`)
		status, _, msg, _ := post(t, b.url, body)
		want := 200
		if role == "checker" {
			want = 500
		}
		if status != want {
			t.Errorf("%s: status %d %s, want %d", role, status, msg, want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMalformedRequestsGetClear400s(t *testing.T) {
	b := setup(t, []Case{{Match: "empty list", Patch: readTestdata(t, "stats/fix.patch")}}, Options{})
	good := func(extra string) string {
		return `{"model":"m",` + extra + `"messages":[{"role":"system","content":"ticketd role: maker"},{"role":"user","content":"empty list"}]}`
	}
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"not JSON", `{"model":`, 400, "not a valid chat completion request"},
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`, 400, `"model" is required`},
		{"stream", good(`"stream":true,`), 400, "does not stream"},
		{"no messages", `{"model":"m","messages":[]}`, 400, "at least one message"},
		{"bad role", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, 400, `role "robot"`},
		{"content of wrong type", `{"model":"m","messages":[{"role":"user","content":42}]}`, 400, "messages[0].content"},
		{"no role line", `{"model":"m","messages":[{"role":"system","content":"be nice"},{"role":"user","content":"empty list"}]}`, 400, "ticketd role: <triage|maker|checker|judge>"},
		{"unknown ticketd role", `{"model":"m","messages":[{"role":"system","content":"ticketd role: poet"},{"role":"user","content":"empty list"}]}`, 400, "knows the roles"},
		{"no case is answered in prose, as a model would", `{"model":"m","messages":[{"role":"system","content":"ticketd role: maker"},{"role":"user","content":"other bug"}]}`, 200, ""},
		{"orphan tool result", `{"model":"m","messages":[{"role":"system","content":"ticketd role: maker"},{"role":"user","content":"empty list"},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, 400, `tool_call_id "c1" does not answer`},
		{"unanswered tool call", `{"model":"m","messages":[{"role":"system","content":"ticketd role: maker"},{"role":"user","content":"empty list"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"submit","arguments":"{}"}}]},{"role":"user","content":"go on"}]}`, 400, "1 unanswered"},
		{"bad tool definition", good(`"tools":[{"type":"function"}],`), 400, "tools[0]"},
		{"unknown fields and content-less assistant are fine", `{"model":"m","prompt_cache_key":"x","service_tier":"flex","messages":[{"role":"system","content":"ticketd role: maker"},{"role":"user","content":"empty list"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_files","arguments":"{\"paths\":[\"calc/stats.py\"]}"}}]},{"role":"tool","tool_call_id":"c1","content":"text"}]}`, 200, ""},
	}
	for _, tt := range tests {
		status, _, msg, _ := post(t, b.url, []byte(tt.body))
		if status != tt.status || !strings.Contains(msg, tt.want) {
			t.Errorf("%s: body %s\n got  %d %q\n want %d containing %q", tt.name, tt.body, status, msg, tt.status, tt.want)
		}
	}
	for _, r := range []struct{ method, path string }{{"GET", "/chat/completions"}, {"POST", "/embeddings"}} {
		req, _ := http.NewRequest(r.method, b.url+r.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 && resp.StatusCode != 404 {
			t.Errorf("%s %s: status %d, want 405 or 404", r.method, r.path, resp.StatusCode)
		}
	}
	if recs := b.srv.Requests(); len(recs) != len(tests)+1 || recs[2].Status != 400 || !strings.Contains(recs[2].Error, "does not stream") {
		t.Errorf("recorded %d requests (want %d, the 405 included), third %+v", len(recs), len(tests)+1, recs[2])
	}
}
