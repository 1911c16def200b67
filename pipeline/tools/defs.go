package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Tool names, in the fixed order they are offered. The order and text never change between
// tickets, workers or days: they open every maker request, so they are the cached prefix.
const (
	ReadFiles = "read_files"
	ListFiles = "list_files"
	Grep      = "grep"
	EditFile  = "edit_file"
	WriteFile = "write_file"
	RunChecks = "run_checks"
	Submit    = "submit"
)

type def struct {
	name, desc, params string
}

var makerDefs = []def{
	{ReadFiles, "Read one or more files of the repository at once. Always batch: pass every path you need in one call rather than one call per file. Paths are relative to the repository root. Each file comes back under a header line \"=== path (N lines)\".",
		`{"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"},"description":"Repository-relative paths, e.g. [\"src/app/core.py\", \"tests/test_core.py\"]."}},"required":["paths"],"additionalProperties":false}`},
	{ListFiles, "List the files below a directory of the repository (recursively, skipping .git and caches). Use it once to learn the layout; prefer grep to find where something is defined.",
		`{"type":"object","properties":{"path":{"type":"string","description":"Directory relative to the repository root; default is the root."}},"additionalProperties":false}`},
	{Grep, "Search the repository's text files for a regular expression (Go RE2 syntax). Returns \"path:line: text\" for each match, at most 200.",
		`{"type":"object","properties":{"pattern":{"type":"string","description":"A regular expression, e.g. \"def parse_date\"."},"path":{"type":"string","description":"Directory or file to search; default is the root."}},"required":["pattern"],"additionalProperties":false}`},
	{EditFile, "Replace one exact occurrence of old_text with new_text in a file. old_text must match the file exactly (including indentation) and occur exactly once: copy it from a read_files result and include enough surrounding lines to make it unique. Several independent edits may be sent as parallel calls in one turn.",
		`{"type":"object","properties":{"path":{"type":"string"},"old_text":{"type":"string","description":"The exact text to replace, copied from the file."},"new_text":{"type":"string","description":"The replacement text."}},"required":["path","old_text","new_text"],"additionalProperties":false}`},
	{WriteFile, "Write a whole file. Use it to create a new file (for example a new test), or to overwrite a file that you have read in this attempt. For small changes to an existing file prefer edit_file.",
		`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string","description":"The complete new content of the file."}},"required":["path","content"],"additionalProperties":false}`},
	{RunChecks, "Run the repository's configured checks (tests, linters, type checks) on the current state of your changes and get a short report of what fails. Compared against the checks at the base commit: only failures you introduced, and failures that remain, are reported.",
		`{"type":"object","properties":{},"additionalProperties":false}`},
	{Submit, "Submit your fix when you believe it is complete. The checks run first; if they fail you get the failures back and can continue. If they pass, your work is reviewed and the conversation ends: do not call any tool after a successful submit.",
		`{"type":"object","properties":{"summary":{"type":"string","description":"Two to five sentences for the human reviewer: the cause of the bug and what you changed."}},"required":["summary"],"additionalProperties":false}`},
}

// MakerTools returns the maker's tool definitions in their fixed order.
func MakerTools() []openai.Tool {
	out := make([]openai.Tool, len(makerDefs))
	for i, d := range makerDefs {
		out[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name:        d.name,
			Description: d.desc,
			Parameters:  json.RawMessage(d.params),
		}}
	}
	return out
}

// ReadOnly reports whether a tool only reads, so calls to it in one turn may run concurrently.
func ReadOnly(name string) bool {
	return name == ReadFiles || name == ListFiles || name == Grep
}

// Exec runs one file tool with its JSON arguments. The result is text for the model; an error
// is also text for the model (the caller prefixes it with "error: ").
func (w *Workspace) Exec(_ context.Context, name, args string) (string, error) {
	switch name {
	case ReadFiles:
		var a struct {
			Paths []string `json:"paths"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return "", err
		}
		return w.ReadFiles(a.Paths)
	case ListFiles:
		var a struct {
			Path string `json:"path"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return "", err
		}
		return w.ListFiles(a.Path)
	case Grep:
		var a struct {
			Pattern string `json:"pattern"`
			Path    string `json:"path"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return "", err
		}
		return w.Grep(a.Pattern, a.Path)
	case EditFile:
		var a struct {
			Path    string `json:"path"`
			OldText string `json:"old_text"`
			NewText string `json:"new_text"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return "", err
		}
		return w.EditFile(a.Path, a.OldText, a.NewText)
	case WriteFile:
		var a struct {
			Path    string  `json:"path"`
			Content *string `json:"content"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return "", err
		}
		if a.Content == nil {
			return "", fmt.Errorf("write_file needs \"content\"")
		}
		return w.WriteFile(a.Path, *a.Content)
	}
	return "", fmt.Errorf("unknown tool %q: the tools are %s", name, strings.Join(toolNames(), ", "))
}

func toolNames() []string {
	out := make([]string, len(makerDefs))
	for i, d := range makerDefs {
		out[i] = d.name
	}
	return out
}

func decodeArgs(args string, v any) error {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments are not valid JSON for this tool (%v); send a JSON object with the documented fields", err)
	}
	return nil
}
