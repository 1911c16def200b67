package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
)

// maxExtraBytes bounds what an endpoint's extraStore holds: thought signatures are a few
// KiB each, so this keeps the calls of thousands of maker turns; past it the oldest go.
const maxExtraBytes = 32 << 20

// extraStore keeps the extra_content of the tool calls an endpoint answered with, by call
// id, so that they go back with those calls when the conversation is replayed. Gemini's
// OpenAI-compatible endpoint puts each call's thought signature there
// ({"extra_content": {"google": {"thought_signature": "…"}}}) and refuses the next request
// with 400 "Function call is missing a thought_signature" when it is not sent back;
// go-openai's ToolCall has no such field, so the pipeline's copy of the answer loses it.
// Safe for concurrent use.
type extraStore struct {
	mu    sync.Mutex
	byID  map[string]json.RawMessage
	order []string // ids, oldest first
	size  int
}

func (s *extraStore) put(id string, raw json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]json.RawMessage{}
	}
	if _, ok := s.byID[id]; ok {
		return // the same answer again: its id is made from its extra_content
	}
	s.byID[id] = raw
	s.order = append(s.order, id)
	s.size += len(id) + len(raw)
	for s.size > maxExtraBytes && len(s.order) > 0 {
		old := s.order[0]
		s.order = s.order[1:]
		s.size -= len(old) + len(s.byID[old])
		delete(s.byID, old)
	}
}

// get returns the extra_content kept for a call id, nil when none is.
func (s *extraStore) get(id string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

// extraSuffix is what a call id carrying extra_content ends with: a short hash of it, so
// that two calls with the same id (servers that count ids from zero, or the synthetic ids of
// identical calls of two tickets) but different signatures never share a stored one.
func extraSuffix(raw json.RawMessage) string {
	sum := sha256.Sum256(raw)
	return "-x" + hex.EncodeToString(sum[:6])
}

// withExtraSuffix is id ending with extraSuffix(raw), added once.
func withExtraSuffix(id string, raw json.RawMessage) string {
	suf := extraSuffix(raw)
	if strings.HasSuffix(id, suf) {
		return id
	}
	return id + suf
}
