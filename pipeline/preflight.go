package pipeline

import (
	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
)

// preflightQuestion is the user turn of a preflight request: short, so the check costs the
// role's fixed prompt (which a provider then holds in its prefix cache for the night) and a
// few output tokens. It names JSON, which OpenAI's json_object mode requires of a prompt.
const preflightQuestion = "ticketd preflight: this request only checks, before the night starts, that the endpoint accepts requests of this shape. There is no ticket and no repository. Do not call any tool. Answer with the JSON object {\"ok\": true} and nothing else."

// PreflightRequests are the requests a night's preflight sends, one per configured role, in
// pipeline order: the role's fixed system prompt and tools and the options an attempt sends
// with them (JSON answers for triage, checker and judge; the maker's tools), so that the
// client shapes them exactly as it shapes the night's requests. ask is whether the maker may
// ask a human (see Runner.NoQuestions).
func PreflightRequests(roles map[model.Role]bool, ask bool) []model.Request {
	var out []model.Request
	for _, r := range model.Roles {
		if !roles[r] {
			continue
		}
		req := model.Request{
			Role: r,
			Messages: []openai.ChatCompletionMessage{
				{Role: openai.ChatMessageRoleSystem, Content: SystemPrompt(r, ask, true)},
				{Role: openai.ChatMessageRoleUser, Content: preflightQuestion},
			},
			JSON:          r != model.RoleMaker,
			PrefixVersion: PromptVersion,
		}
		if r == model.RoleMaker {
			req.Tools = tools.MakerTools(ask, true)
		}
		out = append(out, req)
	}
	return out
}
