package pipeline

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
)

// answersChatter answers each request with the next of its answers and keeps the requests'
// sizes. An answer "refusal:<text>" is a refusal with that text and no content.
type answersChatter struct {
	mu      sync.Mutex
	answers []string
	sizes   []int
}

func (c *answersChatter) Chat(ctx context.Context, req model.Request) (model.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	c.sizes = append(c.sizes, n)
	a := c.answers[0]
	c.answers = c.answers[1:]
	if refusal, ok := strings.CutPrefix(a, "refusal:"); ok {
		return model.Response{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Refusal: refusal}}, nil
	}
	return model.Response{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: a}}, nil
}

// TestTriageRetryDoesNotEchoALongAnswer: triage's re-ask after a bad answer shows a short one
// back to the model, but never a long one (issue 31: a 50 MB answer was sent back whole,
// twice): the retry asks again at the size of the first request.
func TestTriageRetryDoesNotEchoALongAnswer(t *testing.T) {
	good := `{"summary": "off by one in add"}`
	for _, tt := range []struct {
		name   string
		bad    string
		echoed bool
	}{
		{"short bad answer shown back", "Sure! Here is the triage: summary off by one", true},
		{"long bad answer not", strings.Repeat("ramble ", 1<<20), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &answersChatter{answers: []string{tt.bad, good}}
			a := newAttempt(&Runner{Models: c, Roles: map[model.Role]bool{model.RoleTriage: true}}, Job{Ticket: Ticket{Title: "add", Body: "add(1, 1) is 3"}}, time.Time{})
			var tri Triage
			if err := a.ask.askJSON(context.Background(), model.RoleTriage, []openai.ChatCompletionMessage{{Role: "user", Content: "triage this"}}, &tri, nil); err != nil || tri.Summary == "" {
				t.Fatalf("askJSON: %v, %+v", err, tri)
			}
			if len(c.sizes) != 2 {
				t.Fatalf("%d requests, want 2", len(c.sizes))
			}
			grew := c.sizes[1] - c.sizes[0]
			if echoed := grew >= len(tt.bad); echoed != tt.echoed || grew > len(tt.bad)+1024 {
				t.Errorf("the retry grew the request by %d bytes for a %d-byte bad answer; echoed=%v, want %v", grew, len(tt.bad), echoed, tt.echoed)
			}
		})
	}
}
