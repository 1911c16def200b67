package model

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestFinishReasonInOpenAIWords: a finish_reason outside OpenAI's set reaches the pipeline in
// OpenAI's words. Above all a cut answer reads "length", so the maker does not run the tool
// call it was cut inside.
func TestFinishReasonInOpenAIWords(t *testing.T) {
	tests := []struct {
		sent, source, want string
	}{
		{"model_length", "Mistral's API: finish_reason stop, length, model_length, error, tool_calls", "length"},
		{"max_tokens", "Anthropic's stop_reason, as gateways pass it on", "length"},
		{"MAX_TOKENS", "Gemini's finishReason, as gateways pass it on", "length"},
		{"end_turn", "Anthropic's stop_reason", "stop"},
		{"stop_sequence", "Anthropic, Hugging Face TGI", "stop"},
		{"eos_token", "Hugging Face TGI", "stop"},
		{"STOP", "Gemini", "stop"},
		{"tool_use", "Anthropic's stop_reason", "tool_calls"},
		{"SAFETY", "Gemini", "content_filter"},
		{"tool_calls", "OpenAI", "tool_calls"},
		{"something_new", "a value nobody maps is kept as sent", "something_new"},
	}
	for _, tt := range tests {
		t.Run(tt.sent, func(t *testing.T) {
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				writeJSON(w, 200, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[`+
					`{"id":"c1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a.py\",\"content\":\"def f():\\n    return 1\\n\"}"}}]},"finish_reason":"`+tt.sent+`"}],`+
					`"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
			})
			cfg := testConfig(srv.URL)
			cfg.MaxContinuations = -1
			b := setup(t, cfg)
			resp, err := b.client.Chat(context.Background(), userMsg("x"))
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.FinishReason != tt.want {
				t.Errorf("finish reason %q (sent %q; %s), want %q", resp.FinishReason, tt.sent, tt.source, tt.want)
			}
			if recs := b.rec.all(); len(recs) != 1 || recs[0].FinishReason != tt.want {
				t.Errorf("recorded %+v, want finish reason %q", recs, tt.want)
			}
		})
	}
}

// TestInterruptedAnswerRetried: an answer whose generation the server broke off (OpenRouter's
// and Mistral's finish_reason "error", DeepSeek's "insufficient_system_resource") is a fault
// of the server, retried like a 5xx, with its usage kept; it is never handed to the pipeline
// as if the model had finished.
func TestInterruptedAnswerRetried(t *testing.T) {
	broken := func(reason, choiceErr string) string {
		if choiceErr != "" {
			choiceErr = `,"error":` + choiceErr
		}
		return `{"id":"gen-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"I will now rea"},"finish_reason":"` +
			reason + `"` + choiceErr + `}],"usage":{"prompt_tokens":1000,"completion_tokens":4,"total_tokens":1004}}`
	}
	tests := []struct {
		name, source, answer string
		always               bool
		wantSaid             string
	}{
		{"openrouter error with its error object", "OpenRouter: choices[].error beside finish_reason error (koog's OpenRouterChoice)",
			broken("error", `{"code":502,"message":"Provider disconnected mid-generation"}`), false, ""},
		{"mistral error", "Mistral's API: finish_reason error", broken("error", ""), false, ""},
		{"deepseek out of resources, every time", "DeepSeek: finish_reason insufficient_system_resource",
			broken("insufficient_system_resource", ""), true, `the server broke off its answer (finish_reason "insufficient_system_resource")`},
		{"openrouter error with a 400 code, every time", "a mid-generation error is never the request's",
			broken("error", `{"code":400,"message":"Upstream error"}`), true, "Upstream error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
				if tt.always || n == 0 {
					writeJSON(w, 200, tt.answer)
					return
				}
				writeJSON(w, 200, completion("done", "stop", ""))
			})
			cfg := testConfig(srv.URL)
			cfg.Retry.MaxRetries = 2
			b := setup(t, cfg)
			resp, err := b.client.Chat(context.Background(), userMsg("x"))
			recs := b.rec.all()
			if !tt.always {
				if err != nil || resp.Message.Content != "done" || resp.FinishReason != "stop" {
					t.Fatalf("Chat = %q (%s), %v; want the answer that came after the broken one (%s)", resp.Message.Content, resp.FinishReason, err, tt.source)
				}
				if len(recs) != 1 || recs[0].Retries != 1 || recs[0].Usage.PromptTokens != 1000+100 {
					t.Errorf("recorded %+v, want one retry and both answers' usage", recs)
				}
				return
			}
			var f *Fault
			if !errors.Is(err, ErrTransport) || !errors.As(err, &f) || f.Class != ErrorClassServer || !strings.Contains(err.Error(), tt.wantSaid) {
				t.Fatalf("err = %v, want ErrTransport of class server saying %q (%s)", err, tt.wantSaid, tt.source)
			}
			if n := log.count(); n != 3 {
				t.Errorf("server saw %d requests, want 1 + max_retries 2", n)
			}
			if len(recs) != 1 || recs[0].Usage.PromptTokens != 3000 {
				t.Errorf("recorded %+v, want every broken answer's usage", recs)
			}
		})
	}
}
