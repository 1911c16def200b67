package pipeline

import (
	"context"
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
	now    func() time.Time
	job    Job // the ticket, the worktree and the repository's parts of the prompt
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
