package model

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestErrorShapes pins how each real error shape is classified: HTTP status × body (error
// as object, as string, absent, HTML, plain text) × a 200 carrying an error, the
// context-overflow forms, and quota. Every case names where the shape comes from.
func TestErrorShapes(t *testing.T) {
	tests := []struct {
		name, source string
		status       int
		ctype        string
		body         string
		wantClass    string
		wantErr      error
		wantRequests int    // 1: not retried; 2: retried once (MaxRetries 1)
		wantSaid     string // the server's words kept in the error
	}{
		{"openai bad key", "OpenAI API reference, Error codes: 401 invalid_api_key",
			401, "", `{"error":{"message":"Incorrect API key provided: sk-proj-****************abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			ErrorClassRejected, ErrRejected, 1, "Incorrect API key provided: [redacted]"},
		{"openai context_length_exceeded", "OpenAI API, error code context_length_exceeded",
			400, "", `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "maximum context length is 128000"},
		{"vllm flat 400", "vLLM OpenAI server before PR #37011, quoted in ogx-ai/ogx#4534",
			400, "", `{"object":"error","message":"This model's maximum context length is 6048 tokens. However, you requested 6616 tokens (568 in the messages, 6048 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "you requested 6616 tokens"},
		{"vllm nested 400 with code", "vllm-project/vllm PR #37011 (after)",
			400, "", `{"error":{"message":"This model's maximum context length is 16384 tokens. However, you requested 122946 tokens.","type":"BadRequestError","code":"context_length_exceeded"}}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "16384 tokens"},
		{"vllm negative max_tokens", "vllm-project/vllm#4667",
			400, "", `{"object":"error","message":"max_tokens must be at least 1, got -186.","type":"BadRequestError","param":null,"code":400}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "got -186"},
		{"llama.cpp exceed_context_size_error 400", "ggml-org/llama.cpp#19774 (the 400 form)",
			400, "", `{"error":{"code":400,"message":"request (4390 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4390,"n_ctx":4096}}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "4390 tokens"},
		{"llama.cpp exceed_context_size_error 500", "ggml-org/llama.cpp PR #15780 (code 500 with the new type)",
			500, "", `{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":256}}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "enable context shift"},
		{"llama.cpp 500 server_error context exceeded", "ggml-org/llama.cpp#19774 (the 500 form)",
			500, "", `{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "Context size has been exceeded."},
		{"anthropic input plus max_tokens", "docker/docker-agent#569, continuedev/continue#6080: Anthropic 400",
			400, "", `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 178959 + 64000 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again"},"request_id":"req_011CUB2XUHWkFnQzxcKBbjpF"}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "178959 + 64000 > 200000"},
		{"litellm proxy, anthropic upstream", "BrokkAi/brokk-app#540: LiteLLM passing Anthropic's words in a 400",
			400, "", `{"error":{"message":"litellm.BadRequestError: AnthropicException - b'{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"input length and ` + "`max_tokens`" + ` exceed context limit: 179413 + 32768 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again\"}}'. Received Model Group=anthropic/claude-sonnet-4-20250514\nAvailable Model Group Fallbacks=None","type":null,"param":null,"code":"400"}}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "179413 + 32768 > 200000"},
		{"litellm proxy, gemini upstream", "BerriAI/litellm#18282: Gemini's words; LiteLLM names its class when it maps them",
			400, "", `{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: VertexAIException - The input token count (2800010) exceeds the maximum number of tokens allowed (1048575).","type":null,"param":null,"code":"400"}}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "2800010"},
		{"openai insufficient_quota 429", "OpenAI API, Error codes: 429 You exceeded your current quota",
			429, "", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			ErrorClassQuota, ErrQuota, 1, "exceeded your current quota"},
		{"openrouter 402", "openrouter.ai/docs/api/reference/errors-and-debugging: 402 insufficient credits",
			402, "", `{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits"}}`,
			ErrorClassQuota, ErrQuota, 1, "Insufficient credits"},
		{"openai rate limit", "OpenAI API, 429 rate_limit_exceeded",
			429, "", `{"error":{"message":"Rate limit reached for gpt-4.1 on tokens per min (TPM): Limit 30000, Used 29800, Requested 900.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			ErrorClassRateLimit, ErrTransport, 2, "Rate limit reached"},
		{"llama.cpp loading model 503", "mostlygeek/llama-swap#146: llama-server while its model loads; it passes once loaded",
			503, "", `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`,
			ErrorClassServer, ErrTransport, 2, "Loading model"},
		{"tgi out of memory during generation", "huggingface/text-generation-inference#653, #1374: a full batch; the model is loaded",
			500, "", `{"error":"Request failed during generation: Server error: CUDA out of memory. Tried to allocate 16.00 MiB (GPU 0; 22.20 GiB total capacity; 20.75 GiB already allocated; 5.12 MiB free)","error_type":"generation"}`,
			ErrorClassServer, ErrTransport, 2, "CUDA out of memory"},
		{"ollama runner crashed", "ollama/ollama#8770, #11775: the runner exited, cause unknown",
			500, "", `{"error":"llama runner process has terminated: exit status 2"}`,
			ErrorClassServer, ErrTransport, 2, "exit status 2"},
		{"ollama model larger than the memory", "continuedev/continue#12795: Ollama 500 when the model cannot load",
			500, "", `{"error":"model requires more system memory (12.3 GiB) than is available (8.1 GiB)"}`,
			ErrorClassRejected, ErrRejected, 1, "than is available (8.1 GiB)"},
		{"error as string 404", "Ollama: model not found, try pulling it first",
			404, "", `{"error":"model \"qwen3-coder\" not found, try pulling it first"}`,
			ErrorClassRejected, ErrRejected, 1, `model "qwen3-coder" not found`},
		{"error as string 400", "LiteLLM/proxies: {\"error\": \"...\"}",
			400, "", `{"error":"Unrecognized request argument supplied: prompt_cache_key"}`,
			ErrorClassRejected, ErrRejected, 1, "Unrecognized request argument supplied: prompt_cache_key"},
		{"mistral 422 validation list in message", "Gage-Technologies/mistral-go#3, nomtek/mistralai_client_dart#44: Mistral's 422 for a field it does not take",
			422, "", `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","prompt_cache_key"],"msg":"Extra inputs are not permitted","input":"ticketd-maker-v1","url":"https://errors.pydantic.dev/2.6/v/extra_forbidden"}]},"type":"invalid_request_error","param":null,"code":null}`,
			ErrorClassRejected, ErrRejected, 1, "body.prompt_cache_key: Extra inputs are not permitted): set models.endpoints.local.prompt_cache_key: false"},
		{"mistral 422 object Error, message as a list", "partITech/php-mistral#76: Mistral's later shape, object \"Error\" and code 3001",
			422, "", `{"object":"Error","detail":[{"type":"extra_forbidden","loc":["body","max_completion_tokens"],"msg":"Extra inputs are not permitted","input":[]}],"message":[{"type":"extra_forbidden","loc":["body","max_completion_tokens"],"msg":"Extra inputs are not permitted","input":[]}],"type":"invalid_request_error","code":3001}`,
			ErrorClassRejected, ErrRejected, 1, "body.max_completion_tokens: Extra inputs are not permitted): set models.endpoints.local.max_tokens_field: max_tokens"},
		{"fastapi 422 validation list", "FastAPI's default RequestValidationError body (pydantic errors under detail), as FastAPI-based compatible servers send it",
			422, "", `{"detail":[{"type":"extra_forbidden","loc":["body","prompt_cache_key"],"msg":"Extra inputs are not permitted","input":"k"},{"type":"extra_forbidden","loc":["body","messages",2,"reasoning_content"],"msg":"Extra inputs are not permitted","input":"x"}]}`,
			ErrorClassRejected, ErrRejected, 1, "body.prompt_cache_key: Extra inputs are not permitted; body.messages.2.reasoning_content: Extra inputs are not permitted): set models.endpoints.local.prompt_cache_key: false"},
		{"fastapi detail 422", "FastAPI servers (validation errors as detail)",
			422, "", `{"detail":"Extra inputs are not permitted: prompt_cache_key"}`,
			ErrorClassRejected, ErrRejected, 1, "Extra inputs are not permitted"},
		{"error absent 502", "a gateway answering 502 with an empty body",
			502, "", ``, ErrorClassServer, ErrTransport, 2, ""},
		{"html 502", "nginx's default 502 page",
			502, "text/html", `<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>`,
			ErrorClassServer, ErrTransport, 2, "502 Bad Gateway"},
		{"plain text 503", "Envoy's plain-text upstream failure",
			503, "text/plain", `upstream connect error or disconnect/reset before headers. reset reason: connection failure`,
			ErrorClassServer, ErrTransport, 2, "upstream connect error"},
		{"anthropic 529 overloaded", "Anthropic's errors: 529 overloaded_error, through its OpenAI-compatible endpoint",
			529, "", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			ErrorClassServer, ErrTransport, 2, "Overloaded"},
		{"html 504 from cloudflare", "Cloudflare's 504 page in front of a slow server",
			504, "text/html", `<!DOCTYPE html><html><head><title>example.com | 504: Gateway time-out</title></head><body>...</body></html>`,
			ErrorClassServer, ErrTransport, 2, "504: Gateway time-out"},
		{"200 with error object", "openrouter.ai/docs/api/reference/errors-and-debugging: errors after processing started come with 200",
			200, "", `{"id":"gen-1","object":"chat.completion","error":{"code":502,"message":"Provider returned error","metadata":{"raw":"upstream read timeout","provider_name":"Example"}}}`,
			ErrorClassServer, ErrTransport, 2, "Provider returned error: upstream read timeout"},
		{"200 with error string", "lmstudio-ai/lmstudio-bug-tracker#618: unknown path answered 200",
			200, "", `{"error":"Unexpected endpoint or method. (POST /chat/completions)"}`,
			ErrorClassRejected, ErrRejected, 1, "Unexpected endpoint or method"},
		{"azure content filter 400", "Azure OpenAI content filtering: 400 code content_filter, innererror ResponsibleAIPolicyViolation",
			400, "", `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"medium"}}}}}`,
			ErrorClassContentFilter, ErrContentFiltered, 1, "content management policy"},
		{"litellm content policy 400", "LiteLLM ContentPolicyViolationError as its proxy sends it",
			400, "", `{"error":{"message":"litellm.ContentPolicyViolationError: AzureException - The response was filtered","type":null,"param":null,"code":"400"}}`,
			ErrorClassContentFilter, ErrContentFiltered, 1, "ContentPolicyViolationError"},
		{"gemini per-minute limit in quota words", "continuedev/continue#9570, #12643: Gemini 429 RESOURCE_EXHAUSTED says 'exceeded your current quota' and when to retry",
			429, "", `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 17.30897372s.","status":"RESOURCE_EXHAUSTED"}}`,
			ErrorClassRateLimit, ErrRateLimited, 2, "it lifts at 2026-03-01T02:00:34Z"},
		{"gemini 429 as a list", "n4ze3m/page-assist#406: Gemini's OpenAI-compatible endpoint answers [{\"error\": …}]",
			429, "", `[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`,
			ErrorClassRateLimit, ErrTransport, 2, "(server said: Resource has been exhausted (e.g. check quota).)"},
		{"xai prompt too long", "cline/cline#3120: xAI 400",
			400, "", `{"code":"Client specified an invalid argument","error":"This model's maximum prompt length is 131072 but the request contains 136973 tokens."}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "maximum prompt length is 131072"},
		{"tgi inputs plus max_new_tokens", "huggingface/chat-ui#1149, bytedance/UI-TARS-desktop#626: TGI 422",
			422, "", `{"error":"Input validation error: ` + "`inputs`" + ` tokens + ` + "`max_new_tokens`" + ` must be <= 65537. Given: 79993 ` + "`inputs`" + ` tokens and 1024 ` + "`max_new_tokens`" + `","error_type":"validation"}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "must be <= 65537"},
		{"lm studio context overflow", "lmstudio-ai/lmstudio-bug-tracker#237: LM Studio 400",
			400, "", `{"error":"Trying to keep the first 15857 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "context length of only 4096 tokens"},
		{"groq request larger than the tpm limit", "ITSpecialist111/ai_automation_suggester#61: Groq 413",
			413, "", `{"error":{"message":"Request too large for model ` + "`llama-3.3-70b-versatile`" + ` in organization ` + "`org_01`" + ` service tier ` + "`on_demand`" + ` on tokens per minute (TPM): Limit 6000, Requested 14810, please reduce your message size and try again.","type":"tokens","code":"rate_limit_exceeded"}}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "Limit 6000, Requested 14810"},
		{"groq request over the tpm limit names the output limit", "zeeyado/koassistant.koplugin#106: Groq counts max_tokens with the prompt against the TPM limit (Limit 8000, Requested 32979 for a one-word prompt)",
			413, "", `{"error":{"message":"Request too large for model ` + "`openai/gpt-oss-120b`" + ` in organization ` + "`org_01`" + ` service tier ` + "`on_demand`" + ` on tokens per minute (TPM): Limit 8000, Requested 32979, please reduce your message size and try again. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing","type":"tokens","code":"rate_limit_exceeded"}}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "lower models.roles.maker.max_output_tokens"},
		{"openai 429 for a request over the tpm limit", "Aider-AI/aider#1880, TheR1D/shell_gpt#653: OpenAI's 429 rate_limit_exceeded for one request larger than the whole per-minute limit",
			429, "", `{"error":{"message":"Request too large for gpt-4o in organization org-2itOgSdqw0DhUYp0QyLhttLL on tokens per min (TPM): Limit 30000, Requested 36278. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			ErrorClassContextOverflow, ErrContextOverflow, 1, "lower models.roles.maker.max_output_tokens"},
		{"nginx 413 page", "nginx's client_max_body_size in front of a server",
			413, "text/html", "<html>\n<head><title>413 Request Entity Too Large</title></head>\n<body>\n<center><h1>413 Request Entity Too Large</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>",
			ErrorClassContextOverflow, ErrContextOverflow, 1, "413 Request Entity Too Large"},
		{"200 with quota error", "OpenRouter: 200 carrying error.code 402",
			200, "", `{"error":{"code":402,"message":"Insufficient credits"}}`,
			ErrorClassQuota, ErrQuota, 1, "Insufficient credits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				w.Header().Set("Content-Type", cmpOr(tt.ctype, "application/json"))
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			cfg := testConfig(srv.URL)
			cfg.Retry.MaxRetries = 1
			b := setup(t, cfg)
			_, err := b.client.Chat(context.Background(), userMsg("x"))
			t.Logf("source: %s\nstatus %d body %.80s\nerr: %v", tt.source, tt.status, tt.body, err)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v\nwant errors.Is %v", err, tt.wantErr)
			}
			if tt.wantErr != ErrTransport && tt.wantErr != ErrRateLimited && errors.Is(err, ErrTransport) {
				t.Errorf("err = %v: a %s must not be a transport fault", err, tt.wantClass)
			}
			if !strings.Contains(err.Error(), tt.wantSaid) {
				t.Errorf("err = %v\nwant the server's words %q", err, tt.wantSaid)
			}
			if strings.Contains(err.Error(), "sk-proj-") {
				t.Errorf("err = %v: carries the key", err)
			}
			if n := log.count(); n != tt.wantRequests {
				t.Errorf("requests = %d, want %d", n, tt.wantRequests)
			}
			recs := b.rec.all()
			if len(recs) != 1 || recs[0].ErrorClass != tt.wantClass || !strings.Contains(recs[0].Error, tt.wantSaid) {
				t.Errorf("recorded %+v\nwant class %s with the server's words", recs, tt.wantClass)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestTruncatedBodyCounted: a 200 whose body is cut is retried, but its prompt is counted
// as estimated spend, since the provider may have billed it.
func TestTruncatedBodyCounted(t *testing.T) {
	srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
		if n == 0 {
			w.Header().Set("Content-Length", "500")
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"hal`))
			return
		}
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	b := setup(t, testConfig(srv.URL))
	resp, err := b.client.Chat(context.Background(), userMsg(strings.Repeat("x", 400)))
	if err != nil || resp.Message.Content != "ok" || log.count() != 2 {
		t.Fatalf("Chat = %+v, %v after %d requests; want ok after a retry", resp, err, log.count())
	}
	rec := b.rec.all()[0]
	if !rec.UsageEstimated || rec.Usage.PromptTokens <= 100 || rec.CostSource != CostSourceEstimate || rec.Retries != 1 {
		t.Errorf("recorded %+v\nwant the reported 100 prompt tokens plus the cut answer's estimated prompt, flagged estimated", rec)
	}
}

// TestCutBodyWithoutLength: an answer whose length only the connection's close marks (no
// Content-Length, no chunks: an HTTP/1.0-style server, or one behind a proxy that passes the
// close on) and whose server dies mid-body ends cleanly in the middle of its JSON. It is a
// cut answer like any other, retried, not an unusable one.
func TestCutBodyWithoutLength(t *testing.T) {
	srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
		if n > 0 {
			writeJSON(w, 200, completion("ok", "stop", ""))
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" +
			`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"I will re`)
		_ = buf.Flush()
	})
	b := setup(t, testConfig(srv.URL))
	resp, err := b.client.Chat(context.Background(), userMsg("x"))
	if err != nil || resp.Message.Content != "ok" || log.count() != 2 {
		t.Fatalf("Chat = %q, %v after %d requests; want ok after a retry", resp.Message.Content, err, log.count())
	}
	if rec := b.rec.all()[0]; rec.Retries != 1 || !rec.CompletionUnknown {
		t.Errorf("recorded %+v, want one retry and the cut answer's completion unknown", rec)
	}
}

// TestGzipAnswers pins how a gzip-encoded answer is read (Go's transport asks for gzip and
// inflates it): whole, it is the completion; cut mid-stream, or with a broken checksum, it is
// a cut answer, retried; never more of it is inflated than max_answer_bytes.
func TestGzipAnswers(t *testing.T) {
	var whole bytes.Buffer
	zw := gzip.NewWriter(&whole)
	_, _ = zw.Write([]byte(completion("hello", "stop", "")))
	_ = zw.Close()
	gz := whole.Bytes()
	badSum := append(append([]byte{}, gz[:len(gz)-8]...), 0, 0, 0, 0, 0, 0, 0, 0)
	var bomb bytes.Buffer
	zw = gzip.NewWriter(&bomb)
	_, _ = zw.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"`))
	_, _ = zw.Write(bytes.Repeat([]byte("a"), 8<<20))
	_ = zw.Close()
	tests := []struct {
		name      string
		body      []byte
		wantReqs  int
		wantClass string
	}{
		{"whole", gz, 1, ""},
		{"cut mid-stream", gz[:len(gz)/2], 2, ""},
		{"broken checksum", badSum, 2, ""},
		{"8 MiB inflated from a small body", bomb.Bytes(), 1, ErrorClassBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Encoding", "gzip")
				if n == 0 {
					_, _ = w.Write(tt.body)
					return
				}
				_, _ = w.Write(gz)
			})
			b := setup(t, testConfig(srv.URL))
			resp, err := b.client.Chat(context.Background(), userMsg("x"))
			if n := log.count(); n != tt.wantReqs {
				t.Errorf("server saw %d requests, want %d", n, tt.wantReqs)
			}
			if tt.wantClass == "" {
				if err != nil || resp.Message.Content != "hello" {
					t.Errorf("Chat = %q, %v; want the completion", resp.Message.Content, err)
				}
				return
			}
			if recs := b.rec.all(); err == nil || len(recs) != 1 || recs[0].ErrorClass != tt.wantClass {
				t.Errorf("err = %v, recorded %+v; want class %s", err, recs, tt.wantClass)
			}
		})
	}
}

func FuzzParseErrorBody(f *testing.F) {
	for _, s := range []string{
		`{"error":{"message":"m","type":"t","code":"c"}}`, `{"error":"s"}`, `{"object":"error","message":"m","code":400}`,
		`{"detail":"d"}`, `<html><title>502</title></html>`, `plain`, ``, `{"error":{"message":["a","b"],"code":1e400}}`,
		`{"error":{"code":502,"message":"x","metadata":{"raw":"y"}}}`,
		`{"detail":[{"loc":["body","k",2],"msg":"m"},{"msg":""},null]}`, `{"object":"Error","message":{"detail":[{"loc":[],"msg":"m"}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		se := parseErrorBody(body)
		if len(se.msg) > maxServerMessage+len("…") {
			t.Fatalf("message of %d bytes, want at most %d", len(se.msg), maxServerMessage)
		}
		_ = classifyHTTP(500, se)
		_ = classifyHTTP(200, se)
	})
}

// TestSecretsNeverKept: a server that echoes the key (in JSON or plain text) never gets
// it into the error, the record or the log.
func TestSecretsNeverKept(t *testing.T) {
	const key = "live-key-0123456789abcdef"
	for _, body := range []string{
		`{"error":{"message":"key ` + key + ` is not allowed on this deployment"}}`,
		`upstream rejected Authorization: Bearer ` + key,
	} {
		srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
			w.WriteHeader(503)
			_, _ = w.Write([]byte(body))
		})
		t.Setenv("TICKETD_TEST_KEY", key)
		cfg := testConfig(srv.URL)
		cfg.Endpoints["local"] = Endpoint{BaseURL: srv.URL + "/v1", APIKeyEnv: "TICKETD_TEST_KEY"}
		cfg.Retry.MaxRetries = 1
		b := setup(t, cfg)
		_, err := b.client.Chat(context.Background(), userMsg("x"))
		rec := b.rec.all()[0]
		for what, text := range map[string]string{"error": err.Error(), "record": rec.Error, "log": b.logs.String()} {
			if strings.Contains(text, key) {
				t.Errorf("the key is in the %s: %s", what, text)
			}
		}
		if !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("err = %v, want the server's words with the key redacted", err)
		}
	}
}
