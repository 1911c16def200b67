package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// answerInfo is what the wire learnt from a 2xx chat answer beyond go-openai's parse.
type answerInfo struct {
	// usageReported is false when the answer carried no usage (absent, null, or all
	// zero: a real prompt is never zero tokens).
	usageReported bool
	cacheWrite    int64 // prompt_tokens_details.cache_write_tokens or usage.cache_creation_input_tokens
	cacheHit      int64 // usage.prompt_cache_hit_tokens (DeepSeek), cache_read_input_tokens (Anthropic) or timings.cache_n (llama.cpp), when details are absent
	hasHit        bool
	// prompt and completion are the usage block's counts, for an answer go-openai cannot
	// decode (see unreadUsage); go-openai's own parse is used otherwise.
	prompt, completion int64
	// providerCost is usage.cost (OpenRouter, LiteLLM's proxies), nil when absent.
	providerCost *float64
	// errObj is set when the 2xx body carries an error instead of choices.
	errObj *serverError
	// interrupted is the finish_reason of a first choice whose generation the server broke
	// off on its side (Mistral's and OpenRouter's "error", DeepSeek's
	// "insufficient_system_resource"): not an answer, a fault to retry. "" otherwise.
	interrupted string
	// interruptErr is what the server said of it: the choice's own error object, which
	// OpenRouter sends beside finish_reason "error".
	interruptErr serverError
	// extras is the extra_content of the answer's tool calls that carried one, by the id
	// the pipeline gets (see extraStore); nil when none did.
	extras map[string]json.RawMessage
}

// finishReasons maps the finish_reason values servers send outside OpenAI's set to OpenAI's,
// by lower-case value, so that the pipeline reads one vocabulary: above all, an answer cut at
// the output or context limit must read as "length", or the tool call it was cut inside is
// run (a write_file "repaired" into a shorter file). Mistral sends model_length (the context
// window reached) beside length; Anthropic's stop reasons (max_tokens, end_turn,
// stop_sequence, tool_use) and Gemini's (MAX_TOKENS, STOP, SAFETY) come through gateways
// that pass them on; Hugging Face TGI sends eos_token and stop_sequence.
var finishReasons = map[string]openai.FinishReason{
	"max_tokens":    openai.FinishReasonLength,
	"model_length":  openai.FinishReasonLength,
	"end_turn":      openai.FinishReasonStop,
	"stop_sequence": openai.FinishReasonStop,
	"eos":           openai.FinishReasonStop,
	"eos_token":     openai.FinishReasonStop,
	"tool_use":      openai.FinishReasonToolCalls,
	"safety":        openai.FinishReasonContentFilter,
	// Gemini's own spellings of OpenAI's values.
	"stop":   openai.FinishReasonStop,
	"length": openai.FinishReasonLength,
}

// interruptedReasons are the finish_reason values of an answer the server broke off (see
// answerInfo.interrupted).
var interruptedReasons = map[string]bool{"error": true, "insufficient_system_resource": true}

// fixFinishReason rewrites a choice's finish_reason in OpenAI's vocabulary (finishReasons)
// and reports whether it changed it, and the value when it says the generation was broken
// off.
func fixFinishReason(ch map[string]json.RawMessage) (changed bool, interrupted string) {
	var r string
	if json.Unmarshal(ch["finish_reason"], &r) != nil || r == "" {
		return false, ""
	}
	low := strings.ToLower(r)
	if interruptedReasons[low] {
		return false, r
	}
	if to, ok := finishReasons[low]; ok && string(to) != r {
		ch["finish_reason"], _ = json.Marshal(to)
		return true, ""
	}
	return false, ""
}

// normalizeAnswer reads a 2xx chat answer and rewrites, where needed, what go-openai
// would misread:
//
//   - message.content given as an array of parts ([{"type":"text","text":...}]) is
//     joined into one string (go-openai would put it in MultiContent, which the
//     pipeline does not read, and could not replay next to Content);
//   - function.arguments given as a JSON object instead of a string is re-encoded as a
//     string (go-openai would refuse the whole answer);
//   - a tool call without an id, or with the id of another call of the answer or of the
//     conversation before it (servers that derive ids from the tool's name, or count them
//     from zero in every answer), gets a stable synthetic one, 9 letters and digits from a
//     hash of the conversation length, the call's position, name and arguments (see
//     syntheticCallID), so the same answer always gets the same id, each tool result is
//     sent back under its own call's id, and a server that wants unique ids (Anthropic and
//     Bedrock behind a gateway) takes the conversation; a missing type becomes "function";
//   - a tool call given as null is dropped: it names no call to make;
//   - a call in the legacy function_call field is read as the message's one tool call
//     when it has none (see legacyFunctionCall);
//   - a tool call's extra_content (Gemini's thought signature) is kept aside, to be sent
//     back with the call (extraStore), its id suffixed with a hash of it;
//   - a tool-calling message's reasoning_details (OpenRouter's) is kept aside likewise, to
//     be sent back on that turn (see keepReasoningDetails);
//   - a finish_reason outside OpenAI's set is given in OpenAI's words where it has them
//     (finishReasons): a cut answer always reads "length";
//   - created given as a fraction (SambaNova: 1716313435.779) is truncated to whole
//     seconds, and given as anything but a number (a date string) is dropped: go-openai
//     reads it as an integer and would refuse the whole answer over a field ticketd
//     never reads;
//   - a usage count of another type than go-openai's integer (a float, a string) is
//     rewritten as an integer where it is a whole number and removed where it is not (see
//     fixUsage): go-openai would refuse the whole answer over it.
//
// A body that is not a JSON object is returned unchanged for go-openai to reject.
func normalizeAnswer(data []byte, conv prior) ([]byte, answerInfo) {
	var info answerInfo
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil || top == nil {
		return data, info
	}
	readUsage(top, &info)
	var choices []map[string]json.RawMessage
	_ = json.Unmarshal(top["choices"], &choices)
	if e, ok := top["error"]; ok && string(e) != "null" && len(choices) == 0 {
		se := parseErrorBody(data)
		info.errObj = &se
		return data, info
	}
	changed := false
	for ci, ch := range choices {
		if ch == nil {
			continue
		}
		fixed, interrupted := fixFinishReason(ch)
		changed = changed || fixed
		if ci == 0 && interrupted != "" {
			info.interrupted = interrupted
			if e, ok := ch["error"]; ok && string(e) != "null" {
				info.interruptErr = parseErrorBody([]byte(`{"error":` + string(e) + `}`))
			}
		}
		var msg map[string]json.RawMessage
		if json.Unmarshal(ch["message"], &msg) != nil || msg == nil {
			continue
		}
		joined := joinContentParts(msg)
		legacy := legacyFunctionCall(msg, ch)
		calls := fixToolCalls(msg, conv, ci, &info)
		keepReasoningDetails(msg, &info)
		if calls || joined || legacy {
			ch["message"], _ = json.Marshal(msg)
			changed = true
		}
	}
	if changed {
		top["choices"], _ = json.Marshal(choices)
	}
	usage := fixUsage(top)
	if created := fixCreated(top); !changed && !created && !usage {
		return data, info
	}
	out, err := json.Marshal(top)
	if err != nil {
		return data, info
	}
	return out, info
}

// fixCreated makes top's created an integer go-openai can read, or removes it, and
// reports whether it changed it.
func fixCreated(top map[string]json.RawMessage) bool {
	c, ok := top["created"]
	if !ok {
		return false
	}
	var n int64
	if json.Unmarshal(c, &n) == nil {
		return false
	}
	var f float64
	if json.Unmarshal(c, &f) == nil && f >= math.MinInt64 && f < math.MaxInt64 {
		top["created"], _ = json.Marshal(int64(f))
		return true
	}
	delete(top, "created")
	return true
}

// legacyFunctionCall reads a message's function_call, the one-call form OpenAI's API had
// before tool_calls, as its one tool call when the message has no tool_calls: servers that
// turn a tools request into it (Functionary's vLLM server, MeetKai/functionary#243, with
// finish_reason "function_call") would otherwise lose the maker's call, which go-openai keeps
// in FunctionCall, a field the pipeline does not read. The call gets its id and type from
// fixToolCall, and finish_reason "function_call" becomes "tool_calls". Beside tool_calls
// (llama-cpp-python's functionary format sends both, MeetKai/functionary#156) it repeats one
// of them and is dropped, so that it is not replayed as a call without a result. It reports
// whether it changed msg.
func legacyFunctionCall(msg, ch map[string]json.RawMessage) bool {
	fc, has := msg["function_call"]
	if !has || string(bytes.TrimSpace(fc)) == "null" {
		return false
	}
	delete(msg, "function_call")
	var calls []json.RawMessage
	_ = json.Unmarshal(msg["tool_calls"], &calls)
	if jsonObject(fc) == nil || len(calls) > 0 {
		return true
	}
	msg["tool_calls"], _ = json.Marshal([]map[string]json.RawMessage{{"type": json.RawMessage(`"function"`), "function": fc}})
	var r string
	if json.Unmarshal(ch["finish_reason"], &r) == nil && r == string(openai.FinishReasonFunctionCall) {
		ch["finish_reason"], _ = json.Marshal(openai.FinishReasonToolCalls)
	}
	return true
}

// joinContentParts turns content sent as an array of parts into one string, and reports
// whether it did.
func joinContentParts(msg map[string]json.RawMessage) bool {
	c := bytes.TrimSpace(msg["content"])
	if len(c) == 0 || c[0] != '[' {
		return false
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(c, &parts) != nil {
		return false
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	msg["content"], _ = json.Marshal(b.String())
	return true
}

// fixToolCalls gives the tool calls of choice ci in msg the shape go-openai reads (see
// normalizeAnswer), and reports whether it changed any.
func fixToolCalls(msg map[string]json.RawMessage, conv prior, ci int, info *answerInfo) bool {
	var calls []map[string]json.RawMessage
	if json.Unmarshal(msg["tool_calls"], &calls) != nil || len(calls) == 0 {
		return false
	}
	// A null entry is no call: dropped (filling it in would be a call nobody made).
	n := len(calls)
	calls = slices.DeleteFunc(calls, func(tc map[string]json.RawMessage) bool { return tc == nil })
	changed := len(calls) != n
	taken := map[string]bool{} // the ids of this answer's earlier calls
	for j, tc := range calls {
		if fixToolCall(tc, conv, ci, j, taken) {
			changed = true
		}
		if keepExtra(tc, info) {
			changed = true
		}
	}
	if changed {
		msg["tool_calls"], _ = json.Marshal(calls)
	}
	return changed
}

// fixToolCall fixes one tool call: arguments as a string, an id of its own and a type
// present. taken holds the ids of the answer's earlier calls; the call's id is added.
func fixToolCall(tc map[string]json.RawMessage, conv prior, ci, j int, taken map[string]bool) bool {
	var fn map[string]json.RawMessage
	if json.Unmarshal(tc["function"], &fn) != nil || fn == nil {
		fn = map[string]json.RawMessage{}
	}
	changed := false
	args := bytes.TrimSpace(fn["arguments"])
	switch {
	case len(args) == 0 || string(args) == "null":
		fn["arguments"] = json.RawMessage(`"{}"`)
		changed = true
	case args[0] != '"':
		var compact bytes.Buffer
		if json.Compact(&compact, args) == nil {
			fn["arguments"], _ = json.Marshal(compact.String())
			changed = true
		}
	}
	var id, typ, name, argText string
	_ = json.Unmarshal(tc["id"], &id)
	_ = json.Unmarshal(tc["type"], &typ)
	_ = json.Unmarshal(fn["name"], &name)
	_ = json.Unmarshal(fn["arguments"], &argText)
	if id == "" || taken[id] || conv.ids[id] {
		id = syntheticCallID(conv.turn, ci, j, name, argText)
		tc["id"], _ = json.Marshal(id)
		changed = true
	}
	taken[id] = true
	if typ == "" {
		tc["type"] = json.RawMessage(`"function"`)
		changed = true
	}
	if changed {
		tc["function"], _ = json.Marshal(fn)
	}
	return changed
}

// keepExtra records a tool call's extra_content in info.extras under its id, which it
// suffixes with a hash of that content (see extraSuffix); it reports whether it changed the
// id.
func keepExtra(tc map[string]json.RawMessage, info *answerInfo) bool {
	raw := bytes.TrimSpace(tc["extra_content"])
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	var id string
	_ = json.Unmarshal(tc["id"], &id)
	nid := withExtraSuffix(id, raw)
	if info.extras == nil {
		info.extras = map[string]json.RawMessage{}
	}
	info.extras[nid] = slices.Clone(json.RawMessage(raw))
	if nid == id {
		return false
	}
	tc["id"], _ = json.Marshal(nid)
	return true
}

// keepReasoningDetails records the reasoning_details of a message that calls tools in
// info.extras, under reasoningKey of its calls, to be sent back on that turn. OpenRouter
// puts there what a model's provider wants back with its tool calls (Gemini's thought
// signatures as reasoning.encrypted, Anthropic's signed thinking) and answers 400 "Gemini
// models require OpenRouter reasoning details to be preserved in each request" when a
// replayed tool-calling turn lacks them (openrouter.ai/docs, "Preserving reasoning blocks";
// RooCodeInc/Roo-Code#10307, LibreChat-AI/agents#37); go-openai's message has no such field.
func keepReasoningDetails(msg map[string]json.RawMessage, info *answerInfo) {
	raw := bytes.TrimSpace(msg["reasoning_details"])
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	var calls []map[string]json.RawMessage
	if json.Unmarshal(msg["tool_calls"], &calls) != nil || len(calls) == 0 {
		return
	}
	if info.extras == nil {
		info.extras = map[string]json.RawMessage{}
	}
	info.extras[reasoningKey(calls)] = slices.Clone(json.RawMessage(raw))
}

// reasoningKey is the key of a tool-calling turn's reasoning_details in an extraStore: a
// hash of its calls' ids, names and arguments as the pipeline holds and replays them. The
// ids are not changed for it (the provider may match its details to them), so two answers
// with the very same calls and ids share one entry, the first kept.
func reasoningKey(calls []map[string]json.RawMessage) string {
	h := sha256.New()
	for _, c := range calls {
		var id, name, args string
		_ = json.Unmarshal(c["id"], &id)
		fn := jsonObject(c["function"])
		_ = json.Unmarshal(fn["name"], &name)
		_ = json.Unmarshal(fn["arguments"], &args)
		fmt.Fprintf(h, "%q %q %q\n", id, name, args)
	}
	return "reasoning_details:" + hex.EncodeToString(h.Sum(nil)[:12])
}

// syntheticCallID is the id given to a tool call that came without one: 9 letters and
// digits from a hash of where the call stands and what it says. That is the one shape
// every server takes back: Mistral's API and the Mistral chat templates local servers run
// refuse any other ("Tool call id was call_49c89af0 but must be a-z, A-Z, 0-9, with a
// length of 9", jundot/omlx#1997), and OpenAI's and Anthropic's checks allow it. 62^9
// values keep the ids of one conversation apart.
func syntheticCallID(turn, choice, index int, name, args string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%d\x00%d\x00%s\x00%s", turn, choice, index, name, args)))
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	n := binary.BigEndian.Uint64(sum[:8])
	id := make([]byte, 9)
	for i := range id {
		id[i] = digits[n%62]
		n /= 62
	}
	return string(id)
}

// readUsage reads whether usage was sent and the usage fields go-openai's Usage lacks.
// Every field is optional and read on its own: one of the wrong type (a cost sent as a
// string, a count as 12.0) is ignored and the others are kept. A token count is read as a
// whole number, written as an integer or as a float without a fraction.
func readUsage(top map[string]json.RawMessage, x *answerInfo) {
	u := jsonObject(top["usage"])
	if u == nil {
		return
	}
	prompt, hasPrompt := tokenCount(u["prompt_tokens"])
	completion, hasCompletion := tokenCount(u["completion_tokens"])
	x.usageReported = hasPrompt && prompt > 0 || hasCompletion && completion > 0
	x.prompt, x.completion = max(prompt, 0), max(completion, 0)
	d := jsonObject(u["prompt_tokens_details"])
	if w, ok := tokenCount(d["cache_write_tokens"]); ok {
		x.cacheWrite = max(w, 0)
	} else if w, ok := tokenCount(u["cache_creation_input_tokens"]); ok {
		x.cacheWrite = max(w, 0)
	}
	_, hasCached := tokenCount(d["cached_tokens"])
	_, hasDeepSeek := tokenCount(u["prompt_cache_hit_tokens"])
	if !hasCached || hasDeepSeek {
		if hit, ok := otherCacheHit(u, top["timings"]); ok {
			x.cacheHit, x.hasHit = hit, true
		}
	}
	var cost float64
	if json.Unmarshal(u["cost"], &cost) == nil && u["cost"] != nil && string(u["cost"]) != "null" && cost >= 0 {
		x.providerCost = &cost
	}
}

// jsonObject is raw decoded as a JSON object, nil when it is anything else.
func jsonObject(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// tokenCount reads a token count: an integer, or a float without a fraction (12.0).
func tokenCount(raw json.RawMessage) (int64, bool) {
	var n int64
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	if json.Unmarshal(raw, &n) == nil {
		return n, true
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil && f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), true
	}
	return 0, false
}

// openaiUsageCounts are the usage fields go-openai reads as integers, by block ("" for the
// usage object itself): one of another type makes it refuse the whole answer.
var openaiUsageCounts = map[string][]string{
	"":                          {"prompt_tokens", "completion_tokens", "total_tokens"},
	"prompt_tokens_details":     {"audio_tokens", "cached_tokens"},
	"completion_tokens_details": {"audio_tokens", "reasoning_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"},
}

// fixUsage makes top's usage block one go-openai reads, and reports whether it changed it:
// a count go-openai reads as an integer is rewritten as one where tokenCount reads it and
// removed where it does not, a details block that is not an object is removed, and a usage
// that is not an object is removed whole. The other fields are left as they are, for
// readUsage. An answer is never refused over its usage: its tokens are then estimated.
func fixUsage(top map[string]json.RawMessage) bool {
	raw, ok := top["usage"]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return false
	}
	var probe openai.Usage
	if json.Unmarshal(raw, &probe) == nil {
		return false
	}
	u := jsonObject(raw)
	if u == nil {
		delete(top, "usage")
		return true
	}
	for block, fields := range openaiUsageCounts {
		obj := u
		if block != "" {
			if v, has := u[block]; !has || string(bytes.TrimSpace(v)) == "null" {
				continue
			}
			if obj = jsonObject(u[block]); obj == nil {
				delete(u, block)
				continue
			}
		}
		for _, f := range fields {
			if _, has := obj[f]; !has {
				continue
			}
			if n, ok := tokenCount(obj[f]); ok {
				obj[f], _ = json.Marshal(n)
			} else {
				delete(obj, f)
			}
		}
		if block != "" {
			u[block], _ = json.Marshal(obj)
		}
	}
	top["usage"], _ = json.Marshal(u)
	return true
}

// otherCacheHit reads the cached prompt tokens of servers that do not send OpenAI's
// prompt_tokens_details.cached_tokens, or DeepSeek's field that takes precedence over it.
func otherCacheHit(u map[string]json.RawMessage, timings json.RawMessage) (int64, bool) {
	if n, ok := tokenCount(u["prompt_cache_hit_tokens"]); ok {
		return max(n, 0), true
	}
	// Anthropic's names, as LiteLLM and other gateways pass them through.
	if n, ok := tokenCount(u["cache_read_input_tokens"]); ok {
		return max(n, 0), true
	}
	// llama.cpp reports the prompt tokens it took from its KV cache in timings.cache_n.
	if n, ok := tokenCount(jsonObject(timings)["cache_n"]); ok {
		return max(n, 0), true
	}
	return 0, false
}
