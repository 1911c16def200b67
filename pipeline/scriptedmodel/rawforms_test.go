package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestRememberedForms: what the server remembers of a message's bytes is what decoding and
// compacting them afresh gives, asked once or again; a message that does not decode is
// refused each time, under the index it has in that request.
func TestRememberedForms(t *testing.T) {
	s, err := New([]Case{{Match: "ticket", Patch: "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tools := []json.RawMessage{json.RawMessage(`{ "type": "function", "function": { "name": "read_file" } }`)}
	msgs := []json.RawMessage{
		json.RawMessage(`{"role": "system",  "content": "ticketd role: maker"}`),
		json.RawMessage(`{"role":"user","content":[{"type":"text","text":"ticket: "},{"type":"text","text":"x is 1"}]}`),
		json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}]}`),
		json.RawMessage(`{"role":"tool","tool_call_id":"c1","content":"x = 1"}`),
	}
	for round := range 2 {
		if got, want := s.prompt(tools, msgs), canonicalPrompt(tools, msgs); !bytes.Equal(got, want) {
			t.Errorf("round %d: prompt %q, canonicalPrompt %q", round, got, want)
		}
		for i, raw := range msgs {
			got, err := s.decode(raw, i)
			want, werr := decodeMessage(raw, i)
			if err != nil || werr != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("round %d: decode(messages[%d]) = %+v, %v; decodeMessage %+v, %v", round, i, got, err, want, werr)
			}
			if f := s.raws[string(raw)]; f == nil || !f.decoded || f.compact == nil {
				t.Errorf("round %d: messages[%d] is not remembered: %+v", round, i, f)
			}
		}
	}
	bad := json.RawMessage(`{"role":"robot","content":"x"}`)
	for _, i := range []int{3, 5} {
		_, err := s.decode(bad, i)
		_, want := decodeMessage(bad, i)
		if err == nil || err.Error() != want.Error() {
			t.Errorf("decode(a bad message at %d) = %v, want %v", i, err, want)
		}
	}
	if got, want := s.prompt(nil, []json.RawMessage{json.RawMessage(`{"a": [1,`)}), canonicalPrompt(nil, []json.RawMessage{json.RawMessage(`{"a": [1,`)}); !bytes.Equal(got, want) {
		t.Errorf("prompt of bytes that do not compact: %q, canonicalPrompt %q", got, want)
	}
}
