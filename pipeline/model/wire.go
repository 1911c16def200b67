package model

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// maxErrorBody bounds how much of an error answer is read to find the server's words.
const maxErrorBody = 64 << 10

// wireTransport shapes chat-completion requests and answers on the wire, where go-openai
// cannot, for one endpoint:
//
//   - it adds prompt_cache_key (go-openai's ChatCompletionRequest lacks it), the
//     endpoint's extra_body fields, and renames max_completion_tokens as the endpoint's
//     max_tokens_field asks;
//   - it replays the conversation in a shape strict servers accept: "content": "" on
//     messages serialised without content (an assistant turn that only carries tool
//     calls), reasoning_content on tool-calling turns only (see hasToolCalls), no
//     streaming-only tool call index, a tool_call_id on every tool result, tool names
//     that match ^[a-zA-Z0-9_-]{1,64}$ (see fixName);
//   - it adds the endpoint's headers and query parameters;
//   - it normalises answers go-openai would misread (content as an array of parts,
//     arguments as an object, tool calls without an id or type, a legacy function_call)
//     and reports back what go-openai's values drop: the status, the raw error body,
//     Retry-After, whether usage was sent, and usage fields of other providers, through the
//     per-attempt wireState found in the request's context.
type wireTransport struct {
	base      http.RoundTripper
	extras    *extraStore       // the tool calls' extra_content the endpoint sent, to send back
	headers   map[string]string // resolved values, secrets included: never logged
	query     map[string]string
	body      bodyOptions
	delCache  bool  // the endpoint takes no prompt_cache_key
	maxAnswer int64 // bytes of a 2xx body read at most (Endpoint.MaxAnswerBytes)
}

// errAnswerTooLarge ends an exchange whose answer passed the endpoint's max_answer_bytes.
var errAnswerTooLarge = errors.New("the answer is larger than the endpoint's max_answer_bytes")

// bodyOptions are the per-endpoint changes to a chat request body.
type bodyOptions struct {
	maxTokensField string                     // MaxTokensField*
	extra          map[string]json.RawMessage // extra_body, marshalled once
	// extraFor is the extra_content to replay with a tool call of the given id (nil: none
	// kept); see extraStore.
	extraFor func(id string) json.RawMessage
}

type wireKey struct{}

// wireState carries one HTTP attempt's inputs to the transport and its findings back.
// RoundTrip runs on the caller's goroutine, so no locking is needed for the findings.
type wireState struct {
	cacheKey   string
	onResponse func() // called once, when response headers arrive or the exchange fails

	status     int
	retryAfter string      // Retry-After, or "<n>ms" from retry-after-ms
	rateHeader http.Header // a 429's headers that say when the limit lifts (rateReset)
	errBody    []byte      // the body of a >= 400 answer (bounded)
	truncated  bool        // a 2xx body that ended early
	sse        bool        // a 2xx chat answer streamed as server-sent events
	badBody    []byte      // the start of a 2xx chat body that is not JSON
	reqBytes   int         // the request body as sent, for usage estimates
	// jsonBytes is the size of a 2xx chat body read whole that is JSON, 0 otherwise: if
	// go-openai cannot decode it, the answer it holds was still made and may be billed.
	jsonBytes int
	// oversize is the size of a 2xx answer larger than maxAnswer: its Content-Length when it
	// declared one, else the bytes read before ticketd stopped (one more than the limit);
	// oversizeExact says which.
	oversize      int64
	oversizeExact bool
	maxAnswer     int64
	info          answerInfo
	once          sync.Once
}

func withWire(ctx context.Context, ws *wireState) context.Context {
	return context.WithValue(ctx, wireKey{}, ws)
}

func (ws *wireState) responded() {
	if ws.onResponse != nil {
		ws.once.Do(ws.onResponse)
	}
}

// RoundTrip shapes one request for the endpoint and reports back through the request's
// wireState what go-openai's values drop (see wireTransport).
func (t *wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ws, _ := req.Context().Value(wireKey{}).(*wireState)
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if len(t.query) > 0 {
		q := req.URL.Query()
		for k, v := range t.query {
			q.Set(k, v)
		}
		req.URL.RawQuery = q.Encode()
	}
	chat := req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/chat/completions") && req.Body != nil
	var conv prior
	if chat {
		var err error
		if conv, err = t.rewriteRequest(req, ws); err != nil {
			return nil, err
		}
	}

	resp, err := t.base.RoundTrip(req)
	if ws == nil {
		return resp, err
	}
	ws.responded()
	if err != nil {
		return nil, err
	}
	ws.status = resp.StatusCode
	ws.retryAfter = resp.Header.Get("Retry-After")
	if ms := resp.Header.Get("Retry-After-Ms"); ms != "" {
		ws.retryAfter = ms + "ms"
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		ws.rateHeader = keepRateHeaders(resp.Header)
	}
	if resp.StatusCode >= 400 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		ws.errBody = data
		resp.Body = io.NopCloser(bytes.NewReader(data))
		resp.ContentLength = int64(len(data))
		return resp, nil
	}
	if resp.StatusCode/100 != 2 {
		return resp, nil
	}
	limit := cmp.Or(t.maxAnswer, DefaultMaxAnswerBytes)
	if !chat {
		resp.Body = &cappedBody{ReadCloser: resp.Body, limit: limit}
		return resp, nil
	}
	resp, err = readChatAnswer(resp, ws, limit, conv)
	if t.extras != nil {
		for id, raw := range ws.info.extras {
			t.extras.put(id, raw)
		}
	}
	return resp, err
}

// rewriteRequest replaces a chat request's body with the endpoint's shape of it (see
// rewriteChatBody) and returns what the answer's tool calls are checked against.
func (t *wireTransport) rewriteRequest(req *http.Request, ws *wireState) (prior, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return prior{}, fmt.Errorf("read chat request body: %w", err)
	}
	key := ""
	if ws != nil && !t.delCache {
		key = ws.cacheKey
	}
	body, conv, err := rewriteChatBody(body, key, t.body)
	if err != nil {
		return prior{}, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	if ws != nil {
		ws.reqBytes = len(body)
	}
	return conv, nil
}

// readChatAnswer reads a 2xx chat answer whole, so that a reset or time-out mid-body is
// seen and the answer can be normalised before go-openai reads it; never more of it than
// limit. What it finds (a cut, oversize, streamed or non-JSON body) goes to ws.
func readChatAnswer(resp *http.Response, ws *wireState, limit int64, conv prior) (*http.Response, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	resp.Body.Close()
	if err == nil && int64(len(data)) > limit {
		ws.oversize, ws.maxAnswer = int64(len(data)), limit
		if resp.ContentLength > limit {
			ws.oversize, ws.oversizeExact = resp.ContentLength, true
		}
		return nil, fmt.Errorf("read chat response body: %w (%d bytes)", errAnswerTooLarge, limit)
	}
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			ws.truncated = true
		}
		return nil, fmt.Errorf("read chat response body (%d bytes before it ended): %w", len(data), err)
	}
	trimmed := bytes.TrimSpace(data)
	switch {
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
		bytes.HasPrefix(trimmed, []byte("data:")) || bytes.HasPrefix(trimmed, []byte("event:")):
		ws.sse = true
	case closeDelimited(resp) && cutJSON(trimmed):
		// A body whose end only the connection's close marks (no Content-Length, no chunks)
		// ends "cleanly" when the server dies mid-answer: the JSON stops short.
		ws.truncated = true
		return nil, fmt.Errorf("read chat response body (%d bytes before it ended): the JSON stops short: %w", len(data), io.ErrUnexpectedEOF)
	case !json.Valid(trimmed):
		ws.badBody = trimmed[:min(len(trimmed), 2*maxServerMessage)]
	default:
		ws.jsonBytes = len(data)
	}
	data, ws.info = normalizeAnswer(data, conv)
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// closeDelimited says whether only the connection's close marked the body's end: no
// Content-Length, no chunked encoding (whose last chunk proves the end), no compression
// (whose own framing does).
func closeDelimited(resp *http.Response) bool {
	return resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 && !resp.Uncompressed
}

// cutJSON says whether b is the start of a JSON object or array that ends before it closes.
func cutJSON(b []byte) bool {
	if len(b) == 0 || b[0] != '{' && b[0] != '[' {
		return false
	}
	var v json.RawMessage
	return errors.Is(json.NewDecoder(bytes.NewReader(b)).Decode(&v), io.ErrUnexpectedEOF)
}

// prior is what an answer's tool calls are checked against: the number of messages of the
// request, which seeds the ids synthesised for them, and the tool-call ids the conversation
// already holds, which none of them may repeat.
type prior struct {
	turn int
	ids  map[string]bool
}

// rewriteChatBody adds prompt_cache_key (when key is not empty) and the endpoint's body
// options, and replays messages in the strict shape (see wireTransport). It returns what
// the answer's tool calls are checked against. Keys are re-emitted in sorted order, so the
// body is deterministic for a given request.
func rewriteChatBody(body []byte, key string, o bodyOptions) ([]byte, prior, error) {
	var conv prior
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, conv, fmt.Errorf("rewrite chat request body: not a JSON object: %w", err)
	}
	if top == nil {
		return nil, conv, errors.New("rewrite chat request body: null instead of an object")
	}
	for k, v := range o.extra {
		if _, set := top[k]; !set {
			top[k] = v
		}
	}
	if key != "" {
		k, _ := json.Marshal(key)
		top["prompt_cache_key"] = k
	}
	if n, ok := top["max_completion_tokens"]; ok {
		switch o.maxTokensField {
		case MaxTokensFieldMaxTokens:
			delete(top, "max_completion_tokens")
			top["max_tokens"] = n
		case MaxTokensFieldBoth:
			top["max_tokens"] = n
		}
	}
	if raw, ok := top["messages"]; ok {
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return nil, conv, fmt.Errorf("rewrite chat request body: messages: %w", err)
		}
		conv.turn, conv.ids = len(msgs), map[string]bool{}
		if replayShape(msgs, conv.ids, o.extraFor) {
			b, err := json.Marshal(msgs)
			if err != nil {
				return nil, conv, fmt.Errorf("rewrite chat request body: %w", err)
			}
			top["messages"] = b
		}
	}
	out, err := json.Marshal(top)
	return out, conv, err
}

// replayShape fixes messages in place and reports whether it changed any; it adds the ids
// of the assistant turns' tool calls to ids.
func replayShape(msgs []map[string]json.RawMessage, ids map[string]bool, extraFor func(string) json.RawMessage) bool {
	changed := false
	var pending []string // ids of the last assistant turn's tool calls, in order
	for _, m := range msgs {
		if m == nil {
			continue
		}
		if _, has := m["content"]; !has {
			m["content"] = json.RawMessage(`""`)
			changed = true
		}
		var role string
		_ = json.Unmarshal(m["role"], &role)
		if _, has := m["reasoning_content"]; has && !(role == "assistant" && hasToolCalls(m)) {
			delete(m, "reasoning_content")
			changed = true
		}
		var mchanged bool
		switch role {
		case "assistant":
			pending, mchanged = replayAssistant(m, pending[:0], extraFor)
			for _, id := range pending {
				ids[id] = true
			}
		case "tool":
			pending, mchanged = replayToolResult(m, pending)
			if n, has := m["name"]; has && fixName(&n) {
				m["name"] = n
				mchanged = true
			}
		}
		changed = changed || mchanged
	}
	return changed
}

// hasToolCalls reports whether an assistant message carries tool calls. Its
// reasoning_content is replayed: DeepSeek's thinking mode answers 400 "Missing
// reasoning_content field" to a conversation whose tool-calling turns lack it (and Kimi's
// thinking models want it too). Any other message's is dropped: DeepSeek ignores it there,
// and deepseek-reasoner (R1), which makes no tool calls, answers 400 to it.
func hasToolCalls(m map[string]json.RawMessage) bool {
	var calls []json.RawMessage
	return json.Unmarshal(m["tool_calls"], &calls) == nil && len(calls) > 0
}

// replayAssistant drops the streaming-only index of an assistant turn's tool calls, gives
// each the extra_content its answer carried and the turn its reasoning_details (extraFor;
// see keepReasoningDetails), and returns their ids, which the tool results that follow
// answer in order.
func replayAssistant(m map[string]json.RawMessage, pending []string, extraFor func(string) json.RawMessage) ([]string, bool) {
	var calls []map[string]json.RawMessage
	if json.Unmarshal(m["tool_calls"], &calls) != nil || len(calls) == 0 {
		return pending, false
	}
	changed := false
	if _, has := m["reasoning_details"]; !has && extraFor != nil {
		if raw := extraFor(reasoningKey(calls)); raw != nil {
			m["reasoning_details"] = raw
			changed = true
		}
	}
	for _, c := range calls {
		if c == nil {
			continue
		}
		if _, has := c["index"]; has {
			delete(c, "index")
			changed = true
		}
		var fn map[string]json.RawMessage
		if json.Unmarshal(c["function"], &fn) == nil && fn != nil {
			if n := fn["name"]; fixName(&n) {
				fn["name"] = n
				c["function"], _ = json.Marshal(fn)
				changed = true
			}
		}
		var id string
		_ = json.Unmarshal(c["id"], &id)
		pending = append(pending, id)
		if _, has := c["extra_content"]; !has && extraFor != nil && id != "" {
			if raw := extraFor(id); raw != nil {
				c["extra_content"] = raw
				changed = true
			}
		}
	}
	if changed {
		b, _ := json.Marshal(calls)
		m["tool_calls"] = b
	}
	return pending, changed
}

// fixName makes a replayed tool name one that OpenAI and the servers that copy its checks
// take (^[a-zA-Z0-9_-]{1,64}$): a model may call a tool by a name of its own invention
// ("functions.read_files", "repo_browser.open_file", "" ), which ticketd answers as unknown,
// and a strict server refuses the next request with 400 over that name in the history.
// Each other character becomes "_", the name is cut to 64, an empty one becomes "_". It
// reports whether it changed *raw.
func fixName(raw *json.RawMessage) bool {
	var name string
	if json.Unmarshal(*raw, &name) != nil {
		return false
	}
	b := []byte(name)
	ok := len(b) >= 1 && len(b) <= maxNameLen
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i], ok = '_', false
		}
	}
	if ok {
		return false
	}
	b = b[:min(len(b), maxNameLen)]
	if len(b) == 0 {
		b = []byte("_")
	}
	*raw, _ = json.Marshal(string(b))
	return true
}

// maxNameLen is the longest tool name OpenAI takes.
const maxNameLen = 64

// replayToolResult gives a tool result without tool_call_id the id of the call it answers
// (strict servers refuse it otherwise) and returns the ids still unanswered.
func replayToolResult(m map[string]json.RawMessage, pending []string) ([]string, bool) {
	changed := false
	var id string
	_ = json.Unmarshal(m["tool_call_id"], &id)
	if id == "" && len(pending) > 0 && pending[0] != "" {
		b, _ := json.Marshal(pending[0])
		m["tool_call_id"] = b
		changed = true
	}
	if len(pending) > 0 {
		pending = pending[1:]
	}
	return pending, changed
}

// cappedBody fails a body that goes on past limit bytes, so that no answer of the endpoint
// (a model list, an error page served as 200) is read whole however large it is.
type cappedBody struct {
	io.ReadCloser
	limit, read int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.read > b.limit {
		return 0, errAnswerTooLarge
	}
	if room := b.limit + 1 - b.read; int64(len(p)) > room {
		p = p[:room] // one byte past the limit tells a body that ends there from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return n, errAnswerTooLarge
	}
	return n, err
}
