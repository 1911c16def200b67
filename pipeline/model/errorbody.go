package model

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// maxServerMessage bounds the server's own words kept in an error and its record.
const maxServerMessage = 300

// serverError is what a server said about a failure, whatever shape it said it in.
type serverError struct {
	msg string // human words, whitespace collapsed, secrets removed, truncated
	// text is the same words whole (whitespace collapsed), which the classification reads:
	// what decides the class (the context overflow a gateway names after its own long
	// prefix, the "Please retry in 17s" at the end of Gemini's message) may come after the
	// cut. Never shown: it may hold what clean removes.
	text    string
	code    string // error.code as text ("context_length_exceeded", "400", ...)
	codeNum int    // error.code when it is an HTTP-like number (OpenRouter, vLLM, llama.cpp)
	typ     string // error.type
	found   bool   // the body carried an error at all
}

// parseErrorBody reads an error body in every shape compatible servers use:
//
//   - {"error": {"message", "type", "code"}}: OpenAI, OpenRouter (numeric code), llama.cpp
//     (numeric code, type exceed_context_size_error), vLLM >= 0.6;
//   - {"error": "text"}: LM Studio, Ollama, some proxies;
//   - {"object": "error", "message", "type", "code"}: vLLM's older flat shape;
//   - {"detail": "text"} or {"message": "text"}: FastAPI servers and gateways;
//   - a list of validation errors, under detail (FastAPI's 422) or as the message (Mistral,
//     whose object may read "Error"): see validationErrors;
//   - any of these as the first element of a list: Gemini's OpenAI-compatible endpoint;
//   - HTML (a proxy's error page: its <title>, else its text) and plain text.
//
// Anything else yields found=false with the raw text as msg.
func parseErrorBody(body []byte) serverError {
	raw := bytes.TrimSpace(body)
	if len(raw) == 0 {
		return serverError{}
	}
	if raw[0] == '[' {
		// Gemini's OpenAI-compatible endpoint wraps its error in a list:
		// [{"error": {"code": 429, "message": "…", "status": "RESOURCE_EXHAUSTED"}}].
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 && bytes.HasPrefix(bytes.TrimSpace(list[0]), []byte("{")) {
			raw = bytes.TrimSpace(list[0])
		}
	}
	if raw[0] == '{' {
		var top map[string]json.RawMessage
		if json.Unmarshal(raw, &top) == nil {
			se := parseErrorObject(top)
			se.text = strings.Join(strings.Fields(se.msg), " ")
			se.msg = clean(se.msg)
			return se
		}
	}
	text := string(raw)
	if raw[0] == '<' {
		if m := titleRe.FindStringSubmatch(text); m != nil {
			text = m[1]
		} else {
			text = tagRe.ReplaceAllString(text, " ")
		}
		text = html.UnescapeString(text)
	}
	return serverError{msg: clean(text), text: strings.Join(strings.Fields(text), " ")}
}

// parseErrorObject reads the JSON shapes of parseErrorBody; msg is not yet cleaned.
func parseErrorObject(top map[string]json.RawMessage) serverError {
	var se serverError
	e, ok := top["error"]
	switch {
	case ok && string(e) != "null":
		var s string
		if json.Unmarshal(e, &s) == nil {
			se.msg, se.found = s, true
			// mock-llm and Express-style servers: {"error": "SyntaxError", "message": "..."}:
			// the error is a name, the message says what happened.
			var m string
			if json.Unmarshal(top["message"], &m) == nil && m != "" && m != s {
				se.msg = s + ": " + m
			}
			return se
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(e, &obj) == nil {
			se.found = true
			readErrorObject(obj, &se)
		}
	case strings.EqualFold(string(top["object"]), `"error"`):
		se.found = true
		readErrorObject(top, &se)
		if se.msg == "" {
			se.msg, _ = validationErrors(top["detail"])
		}
	default:
		for _, k := range []string{"detail", "message"} {
			var s string
			if json.Unmarshal(top[k], &s) == nil && s != "" {
				return serverError{msg: s, found: true}
			}
			if s, ok := validationErrors(top[k]); ok {
				return serverError{msg: s, found: true}
			}
		}
	}
	return se
}

// validationErrors reads the list of validation errors that FastAPI and pydantic servers
// send for a request they refuse (422 {"detail": [{"loc": ["body", "prompt_cache_key"],
// "msg": "Extra inputs are not permitted", "type": "extra_forbidden"}]}), alone or wrapped
// in an object under "detail", as Mistral's API does in its message
// (Gage-Technologies/mistral-go#3); each as "body.prompt_cache_key: Extra inputs are not
// permitted", so the refused field is in the words the hint reads.
func validationErrors(raw json.RawMessage) (string, bool) {
	var wrapped struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &wrapped) == nil && wrapped.Detail != nil {
		raw = wrapped.Detail
	}
	var items []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return "", false
	}
	var out []string
	for _, it := range items {
		var loc []string
		for _, l := range it.Loc {
			loc = append(loc, fmt.Sprint(l))
		}
		switch {
		case it.Msg == "":
		case len(loc) == 0:
			out = append(out, it.Msg)
		default:
			out = append(out, strings.Join(loc, ".")+": "+it.Msg)
		}
	}
	return strings.Join(out, "; "), len(out) > 0
}

var (
	titleRe = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	tagRe   = regexp.MustCompile(`(?s)<[^>]*>`)
)

func readErrorObject(obj map[string]json.RawMessage, se *serverError) {
	var s string
	if json.Unmarshal(obj["message"], &s) == nil {
		se.msg = s
	} else {
		var parts []string // go-openai issue #381: message as a list
		if json.Unmarshal(obj["message"], &parts) == nil {
			se.msg = strings.Join(parts, ", ")
		} else {
			se.msg, _ = validationErrors(obj["message"])
		}
	}
	_ = json.Unmarshal(obj["type"], &se.typ)
	if c, ok := obj["code"]; ok {
		var n json.Number
		if json.Unmarshal(c, &s) == nil {
			se.code = s
			if v, err := strconv.Atoi(s); err == nil {
				se.codeNum = v
			}
		} else if json.Unmarshal(c, &n) == nil {
			se.code = n.String()
			if v, err := n.Int64(); err == nil {
				se.codeNum = int(v)
			}
		}
	}
	// OpenRouter puts the upstream provider's words in metadata.raw.
	var meta struct {
		Raw string `json:"raw"`
	}
	if json.Unmarshal(obj["metadata"], &meta) == nil && meta.Raw != "" && !strings.Contains(se.msg, meta.Raw) {
		se.msg = strings.TrimSpace(se.msg + ": " + meta.Raw)
	}
}

var secretRe = regexp.MustCompile(`(?i)(sk-[a-z0-9_\-*]{6,}|bearer\s+\S+|api[_-]?key[=:]\s*\S+)`)

// clean collapses whitespace, removes anything that looks like a key and truncates, so a
// server's message can be kept in errors, logs and records.
func clean(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = secretRe.ReplaceAllString(s, "[redacted]")
	if len(s) > maxServerMessage {
		cut := maxServerMessage
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// overflowWords are how servers say a prompt does not fit, lower case.
var overflowWords = []string{
	"context_length_exceeded",        // OpenAI code
	"maximum context length",         // OpenAI, vLLM: "This model's maximum context length is ..."
	"exceeds the available context",  // llama.cpp: "request (4476 tokens) exceeds the available context size"
	"exceed_context_size",            // llama.cpp type
	"context size exceeded",          // llama.cpp builds answering 500
	"context size has been exceeded", // llama.cpp
	"exceeds the context",            // generic
	"exceeds the context window",     // Ollama/LiteLLM wording
	"context window exceeded",
	"prompt is too long",                // Anthropic through gateways
	"input is too long",                 // Bedrock/LiteLLM
	"reduce the length of the messages", // OpenAI, vLLM
	"max_tokens must be at least 1",     // vLLM when the prompt fills max_model_len

	// Anthropic, when the prompt and max_tokens together pass the window: "input length
	// and `max_tokens` exceed context limit: 178959 + 64000 > 200000".
	"exceed context limit",
	// Gemini: "The input token count (2800010) exceeds the maximum number of tokens
	// allowed (1048575)."
	"exceeds the maximum number of tokens allowed",
	// LiteLLM's own class name, when it maps an upstream's words to it.
	"contextwindowexceedederror",
	// xAI: "This model's maximum prompt length is 131072 but the request contains 136973
	// tokens." (cline/cline#3120).
	"maximum prompt length",
	// Hugging Face TGI, 422: "Input validation error: `inputs` tokens + `max_new_tokens` must
	// be <= 8192. Given: 6204 `inputs` tokens and 2047 `max_new_tokens`", and "`inputs` must
	// have less than 4096 tokens" (huggingface/chat-ui#1149, meta-llama/llama#1103).
	"`max_new_tokens` must be <=",
	"`inputs` must have less than",
	// LM Studio, 400: "Trying to keep the first 10136 tokens when context the overflows.
	// However, the model is loaded with context length of only 7866 tokens"
	// (lmstudio-ai/lmstudio-bug-tracker#237, #546).
	"context length of only",
	// Groq, 413: "Request too large for model … on tokens per minute (TPM): Limit 6000,
	// Requested 14810, please reduce your message size and try again" (one request larger
	// than the account's whole per-minute allowance: waiting never lets it through).
	"reduce your message size",
	// OpenAI, 429 with code rate_limit_exceeded: "Request too large for gpt-4o in
	// organization … on tokens per min (TPM): Limit 30000, Requested 36278. The input or
	// output tokens must be reduced in order to run successfully." (Aider-AI/aider#1880,
	// continuedev/continue#11717): one request over the whole per-minute allowance, which
	// counts max_tokens with the prompt; unlike "Rate limit reached for …", no wait lets it
	// through.
	"the input or output tokens must be reduced",
}

// filterWords are how servers say their content filter refused the prompt, lower case:
// Azure OpenAI's code and inner code, LiteLLM's mapped error.
var filterWords = []string{"content_filter", "responsibleaipolicyviolation", "content_policy_violation", "contentpolicyviolation"}

// quotaWords are how servers say the account has no credit left, lower case.
var quotaWords = []string{
	"insufficient_quota", "exceeded your current quota", "insufficient credits", "insufficient_balance",
	"insufficient balance", "billing_hard_limit", "credit balance is too low", "out of credits",
}

// retryLater says whether a 429 that speaks of a quota is a rate limit all the same: Gemini
// answers its per-minute and per-day limits with OpenAI's words for an empty account ("You
// exceeded your current quota, please check your plan and billing details … Please retry in
// 17.3s.", status RESOURCE_EXHAUSTED), and says when to retry; an account without credit
// names no time, and OpenAI's says insufficient_quota.
func retryLater(status int, se serverError) bool {
	if status != http.StatusTooManyRequests || se.says([]string{"insufficient_quota"}) {
		return false
	}
	_, ok := tryAgainIn(se.text)
	return ok
}

// locationWords are how providers refuse every request from where the machine is, lower
// case: OpenAI's 403 (home-assistant/core#120072; songquanpeng/one-api#1692, a server whose
// IP was blocked from one day to the next) and Gemini's 400. No ticket's request causes it.
var locationWords = []string{"unsupported_country_region_territory", "country, region, or territory not supported",
	"user location is not supported"}

// noFitWords are how local servers say the model itself does not fit the machine's memory,
// lower case: loading it failed, so no request is served until the operator changes the
// model or the machine. Ollama answers 500 {"error":"model requires more system memory (7.5
// GiB) than is available (5.2 GiB)"} (continuedev/continue#12795, #9528), or, when loading on
// the GPU fails, "llama runner process has terminated: CUDA error: out of memory"
// (ollama/ollama#9782) after llama.cpp's "cudaMalloc failed: out of memory" and "unable to
// allocate CUDA0 buffer" (ollama/ollama#8447, #12634); LM Studio "Model loading was stopped
// due to insufficient system resources" and, earlier, "Model loading aborted due to
// insufficient system resources" (lmstudio-ai/lmstudio-bug-tracker#1038, #484). Unlike a
// passing 5xx, retrying it only trips the breaker, and unlike a prompt too long, compacting
// the conversation cannot help. An out-of-memory error during generation (TGI's "Request
// failed during generation: Server error: CUDA out of memory. Tried to allocate …" under a
// full batch, huggingface/text-generation-inference#653, #1374) is not among them: the model
// is loaded, and the same request may pass once the batch drains.
var noFitWords = []string{
	"requires more system memory",
	"insufficient system resources",
	"runner process has terminated: cuda error: out of memory",
	"cudamalloc failed: out of memory",
	"unable to allocate cuda",
	"unable to allocate cpu buffer",
}

func (se serverError) says(words []string) bool {
	hay := strings.ToLower(cmp.Or(se.text, se.msg) + " " + se.code + " " + se.typ)
	for _, w := range words {
		if strings.Contains(hay, w) {
			return true
		}
	}
	return false
}

// classifyHTTP sorts an HTTP answer that carries an error (status >= 400, or a 2xx whose
// body is an error object instead of a completion) into a fault, keeping the server's
// words. The body decides before the status: a 500 that says the context is exceeded is
// the ticket's problem, not a fault to retry.
func classifyHTTP(status int, se serverError) fault {
	wire := status
	if status/100 == 2 {
		// A 200 that carries an error: OpenRouter documents this for failures after
		// generation started, with the real status in error.code; LM Studio answers an
		// unknown path this way.
		switch {
		case se.codeNum >= 400 && se.codeNum <= 599:
			status = se.codeNum
		case strings.Contains(strings.ToLower(se.msg), "unexpected endpoint"):
			status = http.StatusNotFound
		default:
			status = http.StatusBadGateway
		}
	}
	// No request's content earns a 401 (the key) or a 404 (the model, the path).
	f := fault{status: status, apiMsg: se.msg, text: cmp.Or(se.text, se.msg),
		anyRequest: status == http.StatusUnauthorized || status == http.StatusNotFound || se.says(locationWords) || se.says(noFitWords)}
	if wire/100 == 2 {
		f.wire = wire
	}
	switch {
	case se.says(overflowWords) || status == http.StatusRequestEntityTooLarge:
		// A 413 with other words is a proxy's body limit (nginx's client_max_body_size):
		// the conversation is too large for the way to the model, as for the model itself.
		f.class = ErrorClassContextOverflow
	case status/100 == 4 && se.says(filterWords):
		f.class = ErrorClassContentFilter
	case status == http.StatusPaymentRequired || se.says(quotaWords) && !retryLater(status, se):
		f.class = ErrorClassQuota
	case se.says(noFitWords):
		// A configuration to change, whatever the status (Ollama's is 500): refused, not
		// retried, and no request causes it (anyRequest).
		f.class = ErrorClassRejected
	case status == http.StatusTooManyRequests:
		f.class, f.retryable = ErrorClassRateLimit, true
	case status == http.StatusRequestTimeout:
		f.class, f.retryable = ErrorClassTimeout, true
	case status == http.StatusConflict || status >= 500:
		f.class, f.retryable = ErrorClassServer, true
	default:
		f.class = ErrorClassRejected
	}
	return f
}
