package model

import openai "github.com/sashabaranov/go-openai"

// bytesPerToken is the estimate's ratio: about four bytes of English or code per token
// for the BPE tokenizers of GPT, Llama, Qwen and DeepSeek models. It errs high on code
// with long identifiers, which is the safe side for budgets.
const bytesPerToken = 4

// EstimateTokens is the token count assumed for n bytes of request or answer when the
// server reports no usage: ceil(n / 4).
func EstimateTokens(n int) int64 {
	if n <= 0 {
		return 0
	}
	return int64((n + bytesPerToken - 1) / bytesPerToken)
}

// unreadUsage is the usage of a 2xx JSON answer go-openai could not decode, which the
// server made and may bill: the counts of its usage block where that could be read, else
// an estimate from the request and the answer's size (estimated true). Nothing is assumed
// cached.
func unreadUsage(ws *wireState) (u Usage, estimated bool) {
	if ws.info.usageReported {
		return Usage{PromptTokens: ws.info.prompt, CompletionTokens: ws.info.completion}, false
	}
	return Usage{PromptTokens: EstimateTokens(ws.reqBytes), CompletionTokens: EstimateTokens(ws.jsonBytes)}, true
}

// estimateUsage is the usage assumed for an answer that came without any: the prompt is
// the request body as sent (messages, tools and the JSON around them, which stands in
// for the chat template's own tokens), the completion is the answer's text, reasoning
// and tool calls (name and arguments). Nothing is assumed cached: over-counting is safer
// than under-counting.
func estimateUsage(reqBytes int, msg openai.ChatCompletionMessage) Usage {
	n := len(msg.Content) + len(msg.ReasoningContent)
	for _, tc := range msg.ToolCalls {
		n += len(tc.Function.Name) + len(tc.Function.Arguments)
	}
	return Usage{PromptTokens: EstimateTokens(reqBytes), CompletionTokens: EstimateTokens(n)}
}
