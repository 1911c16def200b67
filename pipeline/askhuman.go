package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/pipeline/tools"
)

// maxQuestionBytes bounds the question a maker asks: it goes into a GitHub comment, the
// report and every later prompt of the ticket.
const maxQuestionBytes = 2000

// refusedQuestion answers ask_human once the ticket's questions are used up.
const refusedQuestion = "error: ask_human refused: this ticket has no question left (budget.max_questions), and nobody will answer now. Decide from what you have: choose the most plausible reading of the report, fix that, and say in the submit summary which reading you chose and why."

// askHuman ends the attempt with the maker's question when the ticket has a question left;
// otherwise it refuses, and the maker goes on.
func askHuman(tk Ticket, jr *journal, args string) toolResult {
	var q struct {
		Question string `json:"question"`
	}
	if err := json.Unmarshal([]byte(tools.ArgsJSON(args)), &q); err != nil {
		return toolResult{failed: true, text: fmt.Sprintf("error: ask_human arguments are not valid JSON (%v); send {\"question\": \"...\"}", err)}
	}
	question := strings.TrimSpace(q.Question)
	if question == "" {
		return toolResult{failed: true, text: `error: ask_human needs a non-empty "question"`}
	}
	if tk.QuestionsLeft <= 0 {
		jr.note("ask_human refused (no question left): %s", clip(question, 200))
		return toolResult{failed: true, text: refusedQuestion}
	}
	question = clip(question, maxQuestionBytes)
	jr.note("asked a human: %s", question)
	out := Outcome{Conclusion: Conclusion{Status: StatusNeedsInfo, Question: question, Reason: "needs info: the maker asked: " + clip(question, 300)}}
	return toolResult{text: "Question recorded. The attempt ends here; the ticket resumes once it is answered.", final: &out}
}
