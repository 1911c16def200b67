package model

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestOversizeAnswer: an answer above the endpoint's max_answer_bytes — 50 MB of content, as
// issue 31 measured, with and without a Content-Length — is the endpoint's fault, whatever
// the request (Fault.AnyRequest, so the ticket is never charged for it): the client
// stops reading at the limit (the server sees its write fail), keeps its size and never
// holds the body whole, does not ask again with it, and records the call with an estimate
// of what the server may bill.
func TestOversizeAnswer(t *testing.T) {
	const total = 50 << 20
	for _, declared := range []bool{true, false} {
		t.Run("content-length "+strconv.FormatBool(declared), func(t *testing.T) {
			var written atomic.Int64
			srv, wl := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
				head := `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`
				tail := `"},"finish_reason":"stop"}]}`
				w.Header().Set("Content-Type", "application/json")
				if declared {
					w.Header().Set("Content-Length", strconv.Itoa(len(head)+total+len(tail)))
				}
				w.WriteHeader(200)
				io.WriteString(w, head)
				chunk := []byte(strings.Repeat("a", 64<<10))
				for sent := 0; sent < total; sent += len(chunk) {
					k, err := w.Write(chunk)
					written.Add(int64(k))
					if err != nil {
						return // the client hung up, as it should
					}
				}
				io.WriteString(w, tail)
			})
			cfg := testConfig(srv.URL)
			ep := cfg.Endpoints["local"]
			ep.MaxAnswerBytes = 1 << 20
			cfg.Endpoints["local"] = ep
			b := setup(t, cfg)
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := b.client.Chat(context.Background(), userMsg("write everything"))
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			var f *Fault
			if !errors.As(err, &f) || f.Class != ErrorClassBadResponse || !strings.Contains(f.Said, "max_answer_bytes (1048576)") {
				t.Fatalf("Chat err = %v (fault %+v); want a bad_response fault naming the limit", err, f)
			}
			if strings.Contains(err.Error(), "it must be an OpenAI-compatible") || !strings.Contains(err.Error(), "models.roles.maker.max_output_tokens") {
				t.Errorf("Chat err = %v; want the hint to name the output limit the server ignored, not the base URL", err)
			}
			if !f.AnyRequest {
				t.Errorf("fault %+v: want AnyRequest, so the daemon never charges a ticket for an answer no request earns", f)
			}
			if declared && !strings.Contains(f.Said, strconv.Itoa(total+len(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`)+len(`"},"finish_reason":"stop"}]}`))+" bytes") {
				t.Errorf("the declared size is not recorded: %q", f.Said)
			}
			if !declared && !strings.Contains(f.Said, "more than 1048576 bytes") {
				t.Errorf("the size read is not recorded: %q", f.Said)
			}
			if wl.count() != 1 {
				t.Errorf("%d requests: the oversize answer was asked again", wl.count())
			}
			if grew := int64(after.TotalAlloc - before.TotalAlloc); grew > 16<<20 {
				t.Errorf("the client allocated %d bytes for a 50 MB answer capped at 1 MiB", grew)
			}
			t.Logf("server wrote %d of %d bytes before the client hung up; client allocated %d bytes; said %q", written.Load(), total, after.TotalAlloc-before.TotalAlloc, f.Said)
			calls := b.rec.all()
			if len(calls) != 1 || calls[0].ErrorClass != ErrorClassBadResponse || calls[0].Usage.CompletionTokens < 1<<18 {
				t.Errorf("recorded calls %+v: want one bad_response with the answer's estimated tokens", calls)
			}
		})
	}
}
