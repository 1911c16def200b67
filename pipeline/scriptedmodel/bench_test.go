package scriptedmodel

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkChatCompletion measures the double's own cost per maker request (an ~8,000
// token conversation, prefix cache warm), which the offline benchmark pays on top of its
// simulated latency.
func BenchmarkChatCompletion(b *testing.B) {
	patch := `--- a/m.py
+++ b/m.py
@@ -1,2 +1,2 @@
 def f():
-    return 1
+    return 2
`
	srv, err := New([]Case{{Match: "ticket", Patch: patch}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	body := []byte(`{"model":"m","prompt_cache_key":"ticketd-maker-p1","messages":[{"role":"system","content":"ticketd role: maker\n` +
		strings.Repeat("static instructions ", 1600) + `"},{"role":"user","content":"ticket: f returns 1"}]}`)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body)))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}
