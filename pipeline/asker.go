package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
)

// asker sends one attempt's requests to the models, each charged to the attempt's spend, and
// builds the opening every role's conversation starts with.
type asker struct {
	models Chatter
	spend  *spend
	roles  map[model.Role]bool // the configured roles
	layout Layout
	// asking says whether the maker may ask a human (Runner.NoQuestions).
	asking bool
	// checking says whether the repository has checks configured (Job.Checks): the maker is
	// offered run_checks only then.
	checking bool
	now      func() time.Time
	job      Job // the ticket, the worktree and the repository's parts of the prompt
	// unrecorded counts compaction passes not yet recorded on a maker call.
	unrecorded int
}

// chat sends one request and accounts for it against the budget.
func (q *asker) chat(ctx context.Context, role model.Role, msgs []openai.ChatCompletionMessage, tools []openai.Tool, jsonOut bool) (model.Response, error) {
	if err := q.spend.check(); err != nil {
		return model.Response{}, err
	}
	resp, err := q.models.Chat(ctx, model.Request{
		Role:     role,
		TicketID: q.job.Ticket.ID,
		Attempt:  q.job.Ticket.Attempt,
		Messages: msgs,
		Tools:    tools,
		JSON:     jsonOut,
		// The static prefix is the same for every ticket; its version keys the prompt cache.
		PrefixVersion: PromptVersion,
		Compactions:   q.takeCompactions(role),
	})
	q.spend.charge(role, resp, err)
	return resp, err
}

// takeCompactions returns the compaction passes to record on a request of role: those
// that ran since the last maker request, recorded on the next one.
func (q *asker) takeCompactions(role model.Role) int {
	if role != model.RoleMaker {
		return 0
	}
	n := q.unrecorded
	q.unrecorded = 0
	return n
}

// opening builds the opening of a role's conversation: static system prompt, then the
// repository part, then the ticket part. See prompts.go for why the order matters.
func (q *asker) opening(role model.Role, triage *Triage) []openai.ChatCompletionMessage {
	user := RepoContext(q.job.Ticket.Repo, q.job.Instructions, q.job.RepoMap) + "\n" +
		TicketContext(q.job.Ticket, triage, q.job.Dir, q.now())
	system := SystemPrompt(role, q.asking, q.checking)
	if q.layout == LayoutDynamicFirst {
		system = fmt.Sprintf("Working directory: %s\nDate: %s\n\n", q.job.Dir, q.now().UTC().Format(time.DateOnly)) + system
	}
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: system},
		{Role: openai.ChatMessageRoleUser, Content: user},
	}
}

// maxRoleRetries bounds re-asking a cheap role whose answer is not the JSON asked for.
const maxRoleRetries = 2

// askJSON asks a role for a JSON object, re-asking with the parse error on a bad answer.
// v must be a pointer; it holds the accepted answer alone, never fields of one refused
// before it.
func (q *asker) askJSON(ctx context.Context, role model.Role, msgs []openai.ChatCompletionMessage, v any, check func() error) error {
	for try := 0; ; try++ {
		resp, err := q.chat(ctx, role, msgs, nil, true)
		if err != nil {
			return fmt.Errorf("%s: %w", role, err)
		}
		content := jsonPart(resp.Message.Content)
		reflect.ValueOf(v).Elem().SetZero()
		err = json.Unmarshal([]byte(content), v)
		if err == nil && check != nil {
			err = check()
		}
		if err == nil {
			return nil
		}
		if try >= maxRoleRetries {
			return fmt.Errorf("%s answered %d times without the JSON object asked for; last error: %v; last answer: %s",
				role, try+1, err, answerWords(resp, content))
		}
		msgs = append(msgs, retryMessages(resp.Message.Content, err)...)
	}
}

// maxEchoedAnswer bounds a bad answer sent back to the model with the request to fix it.
const maxEchoedAnswer = 2 << 10

// retryMessages ask a role again after an answer that was not the JSON object asked for. A
// short answer is shown back so the model can mend it; a long one (an endpoint that streamed
// megabytes of text) is not: echoing it would pay for it again, in every later request, so
// the model is asked afresh, told only how long its answer was.
func retryMessages(answer string, err error) []openai.ChatCompletionMessage {
	ask := fmt.Sprintf("That was not the JSON object asked for (%v). Answer with the JSON object only.", err)
	if len(answer) > maxEchoedAnswer {
		return []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser,
			Content: fmt.Sprintf("Your previous answer (%d bytes, not repeated here) was not the JSON object asked for (%s). Answer with the JSON object only.", len(answer), clip(err.Error(), 200))}}
	}
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleAssistant, Content: answer},
		{Role: openai.ChatMessageRoleUser, Content: ask},
	}
}

// answerWords says what an answer that was not the JSON asked for was, for the error: a
// refusal, a content filter or a cut answer is named as such, not quoted as empty text.
func answerWords(resp model.Response, content string) string {
	switch {
	case strings.TrimSpace(resp.Message.Refusal) != "":
		return fmt.Sprintf("a refusal: %q", clip(resp.Message.Refusal, 200))
	case resp.FinishReason == string(openai.FinishReasonContentFilter):
		return fmt.Sprintf("%q, stopped by the endpoint's content filter (finish_reason content_filter)", clip(content, 200))
	case resp.FinishReason == string(openai.FinishReasonLength):
		return fmt.Sprintf("%q, cut off at the output limit (finish_reason length)", clip(content, 200))
	}
	return fmt.Sprintf("%q", clip(content, 200))
}

// jsonPart is the JSON object of an answer: without the ```json fence some models wrap
// around it, and without prose before or after it ("Here is my review: {...}") when the
// text from its first "{" to its last "}" is valid JSON. Otherwise the answer as it is,
// for the decoder to refuse.
func jsonPart(s string) string {
	s = stripFence(s)
	if json.Valid([]byte(s)) {
		return s
	}
	i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
	if i >= 0 && j > i && json.Valid([]byte(s[i:j+1])) {
		return s[i : j+1]
	}
	return s
}

// stripFence removes a ```json fence some models wrap around JSON answers.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```json")
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	return strings.TrimSpace(s)
}
