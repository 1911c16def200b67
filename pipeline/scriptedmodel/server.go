package scriptedmodel

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// SystemFingerprint labels every answer as coming from this test double.
const SystemFingerprint = "scripted-model-test-double"

// DefaultModel is listed by GET /v1/models when Options.Models is empty. Any model name
// is accepted in requests and echoed back.
const DefaultModel = "scripted-model"

// maxBodyBytes bounds a request body; real conversations are far smaller.
const maxBodyBytes = 32 << 20

// Faults makes the server fail some requests like a busy provider would.
type Faults struct {
	// RateLimitRate is the share of requests answered 429 with a Retry-After header.
	RateLimitRate float64
	// ServerErrorRate is the share of requests answered 500.
	ServerErrorRate float64
	// RetryAfter is sent with a 429, in whole seconds (rounded up) in Retry-After and in
	// milliseconds in retry-after-ms. Zero sends "0".
	RetryAfter time.Duration
	// RateLimitWindow, when set, exhausts the limit at the first request these faults cover
	// for this long (on Options.Now), as a provider's per-minute quota would: every request
	// inside it is answered 429 saying when the limit lifts, in RateLimitStyle's way; later
	// requests pass. See ratelimit.go.
	RateLimitWindow time.Duration
	// RateLimitAfter is how many requests pass before the limit is exhausted (a "3 requests
	// per minute" account: the 4th is refused); the window starts at the first refused one.
	RateLimitAfter int
	// RateLimitStyle is how a RateLimitWindow 429 says when the limit lifts: "openai"
	// (the default: x-ratelimit-reset-requests as a duration, remaining 0, no Retry-After),
	// "openai-text" (no header; "Please try again in 20s." in the message), "anthropic"
	// (anthropic-ratelimit-requests-reset as an RFC 3339 time, and Retry-After).
	RateLimitStyle string
}

// Options configure a Server. The zero value is a fast, fault-free server.
type Options struct {
	// Seed makes every random decision (faults) reproducible.
	Seed int64
	// Latency is waited (on a real timer) before each answer, to simulate a model's
	// response time; the benchmark sets a realistic figure, tests leave it 0.
	Latency time.Duration
	Faults  Faults
	// RoleFaults replaces Faults for the roles it names ("triage", "maker", "checker",
	// "judge"), e.g. a checker that always answers 500.
	RoleFaults map[string]Faults
	// CacheTTL is how long an unused prefix-cache entry lives; default 5 minutes.
	CacheTTL time.Duration
	// Now is the clock for cache expiry and records; default time.Now.
	Now func() time.Time
	// Models are listed by GET /v1/models; default [DefaultModel].
	Models []string
	// Realism are the mistake rates of realistic cases (Case.Realistic); the zero value
	// means DefaultRealism.
	Realism Realism
}

// Usage is the usage a Server reported for one answer.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CachedTokens     int `json:"cached_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Recorded is one request the Server saw, kept so tests can assert on what a client sent.
type Recorded struct {
	// Seq is the 1-based order in which answers were completed.
	Seq int `json:"seq"`
	// Time is when the request arrived, by Options.Now.
	Time time.Time `json:"time"`
	// Role is from the "ticketd role:" line; empty if the request was refused before.
	Role           string `json:"role"`
	Model          string `json:"model"`
	PromptCacheKey string `json:"prompt_cache_key"`
	// Case is the Match of the case that answered ("" for the default or none).
	Case         string `json:"case"`
	Status       int    `json:"status"`
	Body         []byte `json:"body"`
	Usage        Usage  `json:"usage"`
	FinishReason string `json:"finish_reason"`
	// Error is the message sent with a non-200 status.
	Error string `json:"error,omitempty"`
}

// Server is the scripted model: an OpenAI-compatible chat completions endpoint that
// answers from scenario cases. It is safe for concurrent use.
type Server struct {
	opts  Options
	plans []*plan
	def   *plan

	mu      sync.Mutex
	cache   *prefixCache
	records []Recorded
	seen    map[uint64]int       // identical bodies seen, so a retry draws a fresh fault
	limited map[string]time.Time // RateLimitWindow: when each Faults' limit lifts (key: role, or "" for Options.Faults)
	passed  map[string]int       // RateLimitAfter: requests let through before the limit was reached
	reviews map[string]int       // checker/judge answers per role and case: the only per-ticket state

	// raws remembers what each message or tool definition decodes and compacts to, by its
	// bytes: a client sends its whole conversation with every request, so a session of n
	// requests would decode its first message n times (most of the double's CPU in a night).
	rawsMu    sync.Mutex
	raws      map[string]*rawForms
	rawsBytes int // the keys' and compact forms' bytes in raws

	httpSrv *http.Server
}

// rawForms is what the double makes of one message's or tool definition's bytes.
type rawForms struct {
	msg     message // decodeMessage's, when decoded is set
	decoded bool
	compact []byte // canonicalPrompt's line for it (without the newline), nil until asked
}

// maxRaws and maxRawsBytes bound Server.raws: past either the remembered forms are dropped
// and made again (a benchmark's night of many tickets would otherwise keep every message).
const (
	maxRaws      = 4096
	maxRawsBytes = 64 << 20
)

// forms returns the remembered forms of raw, making the entry.
func (s *Server) forms(raw json.RawMessage) *rawForms {
	s.rawsMu.Lock()
	defer s.rawsMu.Unlock()
	f, ok := s.raws[string(raw)]
	if !ok {
		if len(s.raws) >= maxRaws || s.rawsBytes+2*len(raw) > maxRawsBytes {
			clear(s.raws)
			s.rawsBytes = 0
		}
		f = &rawForms{}
		s.raws[string(raw)] = f
		s.rawsBytes += 2 * len(raw) // the key, and at most as much for its compact form
	}
	return f
}

// decode is decodeMessage(raw, i), remembered when it succeeds. The message is shared: no
// caller changes its slices.
func (s *Server) decode(raw json.RawMessage, i int) (message, error) {
	f := s.forms(raw)
	s.rawsMu.Lock()
	m, ok := f.msg, f.decoded
	s.rawsMu.Unlock()
	if ok {
		return m, nil
	}
	m, err := decodeMessage(raw, i)
	if err != nil {
		return m, err
	}
	s.rawsMu.Lock()
	f.msg, f.decoded = m, true
	s.rawsMu.Unlock()
	return m, nil
}

// prompt is canonicalPrompt(tools, messages), each line's compact form remembered.
func (s *Server) prompt(tools, messages []json.RawMessage) []byte {
	var b bytes.Buffer
	for _, list := range [][]json.RawMessage{tools, messages} {
		for _, raw := range list {
			f := s.forms(raw)
			s.rawsMu.Lock()
			c := f.compact
			s.rawsMu.Unlock()
			if c == nil {
				c = compactLine(raw)
				s.rawsMu.Lock()
				f.compact = c
				s.rawsMu.Unlock()
			}
			b.Write(c)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// New compiles the cases, parsing and checking every patch up front so a bad scenario
// fails here, naming its case, rather than mid-night.
func New(cases []Case, opts Options) (*Server, error) {
	opts.CacheTTL = cmp.Or(opts.CacheTTL, 5*time.Minute)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if len(opts.Models) == 0 {
		opts.Models = []string{DefaultModel}
	}
	if err := checkFaults("Faults", opts.Faults); err != nil {
		return nil, err
	}
	for role, f := range opts.RoleFaults {
		if err := checkFaults("RoleFaults["+role+"]", f); err != nil {
			return nil, err
		}
		switch role {
		case "triage", "maker", "checker", "judge":
		default:
			return nil, fmt.Errorf("new scripted model: RoleFaults names role %q; want triage, maker, checker or judge", role)
		}
	}
	if opts.Realism == (Realism{}) {
		opts.Realism = DefaultRealism
	}
	if err := opts.Realism.check(); err != nil {
		return nil, err
	}
	if opts.Latency < 0 {
		return nil, fmt.Errorf("new scripted model: Latency %v is negative", opts.Latency)
	}
	s := &Server{opts: opts, cache: newPrefixCache(opts.CacheTTL), seen: map[uint64]int{}, raws: map[string]*rawForms{}, limited: map[string]time.Time{}, passed: map[string]int{}, reviews: map[string]int{}}
	for i, c := range cases {
		p, err := compileCase(i, c)
		if err != nil {
			return nil, fmt.Errorf("new scripted model: %w", err)
		}
		if c.Realistic {
			p.real = compileRealism(p, opts.Seed, opts.Realism)
		}
		if c.Match == "" {
			if s.def != nil {
				return nil, fmt.Errorf("new scripted model: case %d is a second default case (empty Match); keep one", i)
			}
			s.def = p
			continue
		}
		s.plans = append(s.plans, p)
	}
	if len(s.plans) == 0 && s.def == nil {
		return nil, errors.New("new scripted model: no cases; give at least one Case with a Patch")
	}
	return s, nil
}

func checkFaults(field string, f Faults) error {
	if f.RateLimitRate < 0 || f.ServerErrorRate < 0 || f.RateLimitRate+f.ServerErrorRate > 1 {
		return fmt.Errorf("new scripted model: %s rates %.3f (429) and %.3f (500) must be >= 0 and sum to at most 1", field, f.RateLimitRate, f.ServerErrorRate)
	}
	if f.RetryAfter < 0 || f.RateLimitWindow < 0 || f.RateLimitAfter < 0 {
		return fmt.Errorf("new scripted model: %s.RetryAfter %v or RateLimitWindow %v is negative", field, f.RetryAfter, f.RateLimitWindow)
	}
	switch f.RateLimitStyle {
	case "", "openai", "openai-text", "anthropic":
	default:
		return fmt.Errorf("new scripted model: %s.RateLimitStyle %q: want openai, openai-text or anthropic", field, f.RateLimitStyle)
	}
	return nil
}

// Start serves on a fresh loopback port and returns the base URL to give an OpenAI
// client, ending in /v1.
func (s *Server) Start() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpSrv != nil {
		return "", errors.New("start scripted model: already started")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("start scripted model: listen on loopback: %w", err)
	}
	s.httpSrv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go s.httpSrv.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed after Close
	return "http://" + ln.Addr().String() + "/v1", nil
}

// Close stops a started server; requests in flight are cut off.
func (s *Server) Close() error {
	s.mu.Lock()
	srv := s.httpSrv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	if err := srv.Close(); err != nil {
		return fmt.Errorf("close scripted model: %w", err)
	}
	return nil
}

// Requests returns a copy of every request seen so far, in completion order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.records))
	copy(out, s.records)
	return out
}

// Handler serves /v1/chat/completions and /v1/models, for use with httptest or a mux.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.chat)
	mux.HandleFunc("/v1/models", s.models)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error",
			fmt.Sprintf("the scripted model test double serves POST /v1/chat/completions and GET /v1/models, not %s %s", r.Method, r.URL.Path))
	})
	return mux
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use GET /v1/models")
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, m := range s.opts.Models {
		list.Data = append(list.Data, model{ID: m, Object: "model", OwnedBy: SystemFingerprint})
	}
	writeJSON(w, http.StatusOK, list)
}

// exchange is one request in flight.
type exchange struct {
	rec  Recorded
	req  chatRequest
	msgs []message
	plan *plan
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	ex := &exchange{rec: Recorded{Time: s.opts.Now()}}
	status, kind, err := s.parse(w, r, ex)
	if err == nil {
		status, kind, err = s.fault(w, ex)
	}
	if err == nil {
		if err = s.wait(r.Context(), ex); err != nil {
			status, kind = 499, "client_closed_request" // nginx's code: nobody reads it
		}
	}
	if err != nil {
		ex.rec.Status, ex.rec.Error = status, err.Error()
		s.record(ex.rec)
		writeError(w, status, kind, err.Error())
		return
	}
	resp := s.answer(ex)
	ex.rec.Status = http.StatusOK
	s.record(ex.rec)
	writeJSON(w, http.StatusOK, resp)
}

// parse reads and validates the request; it returns the status to refuse it with.
func (s *Server) parse(w http.ResponseWriter, r *http.Request, ex *exchange) (int, string, error) {
	const bad = http.StatusBadRequest
	if r.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, "invalid_request_error", fmt.Errorf("use POST /v1/chat/completions, not %s", r.Method)
	}
	body, err := readBody(w, r)
	ex.rec.Body = body
	if err != nil {
		return http.StatusRequestEntityTooLarge, "invalid_request_error", err
	}
	if err := json.Unmarshal(body, &ex.req); err != nil {
		return bad, "invalid_request_error", fmt.Errorf("request body is not a valid chat completion request (JSON): %v", err)
	}
	ex.rec.Model, ex.rec.PromptCacheKey = ex.req.Model, ex.req.PromptCacheKey
	if ex.req.Model == "" {
		return bad, "invalid_request_error", errors.New(`"model" is required`)
	}
	if ex.req.Stream {
		return bad, "invalid_request_error", errors.New(`the scripted model test double does not stream; send "stream": false (or omit it)`)
	}
	if len(ex.req.Messages) == 0 {
		return bad, "invalid_request_error", errors.New(`"messages" must hold at least one message`)
	}
	for i, raw := range ex.req.Tools {
		var t struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &t) != nil || t.Type != "function" || t.Function.Name == "" {
			return bad, "invalid_request_error", fmt.Errorf(`tools[%d] must be {"type":"function","function":{"name":...}}`, i)
		}
	}
	for i, raw := range ex.req.Messages {
		m, err := s.decode(raw, i)
		if err != nil {
			return bad, "invalid_request_error", err
		}
		ex.msgs = append(ex.msgs, m)
	}
	if err := checkToolPairing(ex.msgs); err != nil {
		return bad, "invalid_request_error", err
	}
	role, err := detectRole(ex.msgs)
	if err != nil {
		return bad, "invalid_request_error", err
	}
	ex.rec.Role = role
	p, err := matchCase(s.plans, s.def, ex.msgs)
	if err != nil {
		// A real model answers whatever it is asked, a conversation about no known bug
		// included (a client's health check, a stray prompt): in prose, with no tool call.
		ex.plan = nil
		return 0, "", nil
	}
	ex.plan, ex.rec.Case = p, p.Match
	return 0, "", nil
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	buf, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return buf, fmt.Errorf("read request body (limit %d bytes): %v", maxBodyBytes, err)
	}
	return buf, nil
}

// checkToolPairing enforces OpenAI's rule: every tool call of an assistant message is
// answered by a tool message before the conversation goes on, and every tool message
// answers such a call.
func checkToolPairing(msgs []message) error {
	pending := map[string]bool{}
	for i, m := range msgs {
		if m.Role == "tool" {
			if !pending[m.ToolCallID] {
				return fmt.Errorf("messages[%d]: tool_call_id %q does not answer a tool call of the preceding assistant message", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
			continue
		}
		if len(pending) > 0 {
			return fmt.Errorf("messages[%d]: an assistant message with tool_calls must be followed by tool messages answering each call; %d unanswered", i, len(pending))
		}
		for _, tc := range m.ToolCalls {
			pending[tc.ID] = true
		}
	}
	return nil
}

// fault decides, reproducibly under the seed, whether this request fails. The draw
// depends on the body and on how often that exact body was seen, not on arrival order,
// so concurrent clients see the same faults run after run and a retry draws afresh.
func (s *Server) fault(w http.ResponseWriter, ex *exchange) (int, string, error) {
	f, ok := s.opts.RoleFaults[ex.rec.Role]
	key := ex.rec.Role
	if !ok {
		f, key = s.opts.Faults, ""
	}
	if f.RateLimitWindow > 0 {
		if status, kind, err := s.windowLimit(w, f, key); err != nil {
			return status, kind, err
		}
	}
	if f.RateLimitRate == 0 && f.ServerErrorRate == 0 {
		return 0, "", nil
	}
	h := fnv64(ex.rec.Body)
	s.mu.Lock()
	n := s.seen[h]
	s.seen[h] = n + 1
	s.mu.Unlock()
	u := unitFloat(uint64(s.opts.Seed) ^ h ^ (uint64(n+1) * 0x9e3779b97f4a7c15))
	switch {
	case u < f.RateLimitRate:
		secs := int64((f.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		w.Header().Set("retry-after-ms", strconv.FormatInt(f.RetryAfter.Milliseconds(), 10))
		return http.StatusTooManyRequests, "rate_limit_exceeded", errors.New("scripted rate limit (test double fault injection); retry after the Retry-After delay")
	case u < f.RateLimitRate+f.ServerErrorRate:
		return http.StatusInternalServerError, "server_error", errors.New("scripted server error (test double fault injection); retry the request")
	}
	return 0, "", nil
}

// wait simulates the model's response time on a real timer.
func (s *Server) wait(ctx context.Context, ex *exchange) error {
	d := s.opts.Latency
	if ex.plan != nil {
		d += ex.plan.Latency
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("client went away while the scripted model was answering: %w", context.Cause(ctx))
	}
}

func (s *Server) record(rec Recorded) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec.Seq = len(s.records) + 1
	s.records = append(s.records, rec)
}

// answer builds the role's reply and its usage. The prompt cache is consulted at answer
// time, as a provider writes the prefix once it has processed the prompt.
func (s *Server) answer(ex *exchange) chatResponse {
	prompt := s.prompt(ex.req.Tools, ex.req.Messages)
	digest := sha256.Sum256(prompt)
	title := ticketTitle(ex.msgs)
	var (
		content string
		calls   []toolCall
	)
	switch {
	case ex.plan == nil:
		content = unmatchedAnswer
	case ex.rec.Role == "maker":
		h := readHistory(ex.msgs)
		h.offered = toolNames(ex.req.Tools)
		for i, in := range makerTurn(ex.plan, h, title) {
			if in.name == "" { // an answer in prose, no tool call
				content = in.args
				continue
			}
			calls = append(calls, toolCall{
				ID:       fmt.Sprintf("call_%s_%d", hex.EncodeToString(digest[:6]), i),
				Type:     "function",
				Function: functionCall{Name: in.name, Arguments: in.args},
			})
		}
	case ex.rec.Role == "triage":
		content = triageContent(ex.plan, title)
	case ex.rec.Role == "checker":
		if angle := reviewAngle(ex.msgs); angle != "correctness" {
			content = angleReview(ex.plan, angle, ex.msgs)
		} else {
			content = checkerReview(ex.plan, s.review("checker", ex.plan))
		}
	case ex.rec.Role == "arbiter":
		content = arbiterContent(ex.msgs)
	case ex.rec.Role == "judge":
		content = judgeContent(title, ex.plan.JudgeFailsAlways || ex.plan.JudgeFailsOnce && s.review("judge", ex.plan) == 1, failedVerifications(ex.msgs), fixReviewed(ex.plan, ex.msgs))
	}

	limit := cmp.Or(ex.req.MaxCompletionTokens, ex.req.MaxTokens)
	visible := estimateTokens(answerBytes(content, calls))
	reasoning := reasoningTokens(ex.req.ReasoningEffort, visible)
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	if limit > 0 && visible+reasoning > limit {
		reasoning = min(reasoning, limit/2)
		content, calls = cutAnswer(content, calls, (limit-reasoning)*bytesPerToken)
		visible = estimateTokens(answerBytes(content, calls))
		finish = "length"
	}

	promptTokens := estimateTokens(len(prompt))
	s.mu.Lock()
	cached := s.cache.use(ex.req.PromptCacheKey+"\x00"+ex.req.Model, prompt, s.opts.Now())
	s.mu.Unlock()

	u := usage{
		PromptTokens:            promptTokens,
		CompletionTokens:        visible + reasoning,
		TotalTokens:             promptTokens + visible + reasoning,
		PromptTokensDetails:     promptTokensDetails{CachedTokens: cached},
		CompletionTokensDetails: completionTokensDetails{ReasoningTokens: reasoning},
	}
	ex.rec.Usage = Usage{PromptTokens: u.PromptTokens, CachedTokens: cached, CompletionTokens: u.CompletionTokens,
		ReasoningTokens: reasoning, TotalTokens: u.TotalTokens}
	ex.rec.FinishReason = finish

	msg := responseMessage{Role: "assistant", ToolCalls: calls}
	if len(calls) == 0 {
		msg.Content = &content
	}
	return chatResponse{
		ID:                "chatcmpl-scripted-" + hex.EncodeToString(digest[:8]),
		Object:            "chat.completion",
		Created:           ex.rec.Time.Unix(),
		Model:             ex.req.Model,
		SystemFingerprint: SystemFingerprint,
		Choices:           []choice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:             u,
	}
}

// unmatchedAnswer is the reply to a conversation that names no case: what a model says
// when it is given nothing it can work on.
const unmatchedAnswer = "I see no bug report in this conversation that I could work on."

// review counts answers per role and case and returns this one's number, from 1.
func (s *Server) review(role string, p *plan) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := role + "\x00" + p.Match
	s.reviews[key]++
	return s.reviews[key]
}

// reasoningTokens is a computed stand-in for hidden reasoning: none unless the request
// asked for an effort, then a multiple of the visible answer that grows with the effort.
func reasoningTokens(effort string, visible int) int {
	switch effort {
	case "", "none", "minimal":
		return 0
	case "low":
		return (visible + 1) / 2
	case "high":
		return 4 * visible
	default: // "medium" and anything newer
		return 2 * visible
	}
}

func answerBytes(content string, calls []toolCall) int {
	n := len(content)
	for _, c := range calls {
		n += len(c.Function.Name) + len(c.Function.Arguments)
	}
	return n
}

// cutAnswer keeps the first budget bytes of the answer, as a provider stops generating
// at the output limit: content is cut, a tool call's arguments are cut mid-JSON and the
// calls after it dropped.
func cutAnswer(content string, calls []toolCall, budget int) (string, []toolCall) {
	if len(content) >= budget {
		return cutString(content, budget), nil
	}
	budget -= len(content)
	var kept []toolCall
	for _, c := range calls {
		size := len(c.Function.Name) + len(c.Function.Arguments)
		if size > budget {
			c.Function.Arguments = cutString(c.Function.Arguments, max(0, budget-len(c.Function.Name)))
			return content, append(kept, c)
		}
		budget -= size
		kept = append(kept, c)
	}
	return content, kept
}

// cutString cuts at most n bytes without splitting a UTF-8 sequence.
func cutString(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do about it
}

func writeError(w http.ResponseWriter, status int, kind, msg string) {
	code := kind
	writeJSON(w, status, errorBody{Error: apiError{Message: msg, Type: kind, Code: &code}})
}

func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// unitFloat maps x through splitmix64 to [0, 1).
func unitFloat(x uint64) float64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// toolNames are the names of the tools a request offers, nil when it offers none.
func toolNames(defs []json.RawMessage) map[string]bool {
	var out map[string]bool
	for _, raw := range defs {
		var t struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Function.Name != "" {
			if out == nil {
				out = map[string]bool{}
			}
			out[t.Function.Name] = true
		}
	}
	return out
}
