package scriptedmodel_test

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
)

// A ticketd client talks to the double exactly as to a provider: only the base URL differs.
func Example() {
	srv, err := scriptedmodel.New([]scriptedmodel.Case{{
		Match: "Average of an empty list crashes",
		Patch: "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,4 @@\n def mean(xs):\n+    if not xs:\n+        return 0.0\n     return sum(xs) / len(xs)\n",
	}}, scriptedmodel.Options{Seed: 1})
	if err != nil {
		panic(err)
	}
	url, err := srv.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	cfg := openai.DefaultConfig("")
	cfg.BaseURL = url
	resp, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: "gpt-test",
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "ticketd role: maker"},
			{Role: openai.ChatMessageRoleUser, Content: "Average of an empty list crashes"},
		},
	})
	if err != nil {
		panic(err)
	}
	call := resp.Choices[0].Message.ToolCalls[0].Function
	fmt.Println(resp.SystemFingerprint, resp.Model)
	fmt.Println(call.Name, call.Arguments)
	fmt.Println(resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
	// Output:
	// scripted-model-test-double gpt-test
	// read_files {"paths":["calc.py"]}
	// 28 8
}
