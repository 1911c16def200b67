package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	AskHuman  = "ask_human"
)

type def struct {
	name, desc, params string
}

var makerDefs = []def{
	{ReadFiles, "Read one or more files of the repository at once. Always batch: pass every path you need in one call rather than one call per file. Paths are relative to the repository root. Each item is a path string, or an object {\"path\", \"start_line\", \"end_line\"} (1-based, inclusive; either may be left out) to read only those lines of a long file. Each file comes back under a header line \"=== path (N lines)\", or \"=== path (lines A-B of N)\" for part of one. One result holds at most 60 KiB: a file that does not fit is cut at a line boundary and the result says which start_line reads on.",
		`{"type":"object","properties":{"paths":{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"object","properties":{"path":{"type":"string"},"start_line":{"type":"integer","minimum":1},"end_line":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}]},"description":"Repository-relative paths, e.g. [\"src/app/core.py\", {\"path\": \"src/app/big.py\", \"start_line\": 1200, \"end_line\": 1400}]."}},"required":["paths"],"additionalProperties":false}`},
	{ListFiles, "List the files below a directory of the repository (recursively, skipping .git and caches). Use it once to learn the layout; prefer grep to find where something is defined.",
		`{"type":"object","properties":{"path":{"type":"string","description":"Directory relative to the repository root; default is the root."}},"additionalProperties":false}`},
	{Grep, "Search the repository's text files for a regular expression (Go RE2 syntax). Returns \"path:line: text\" for each match, at most 200.",
		`{"type":"object","properties":{"pattern":{"type":"string","description":"A regular expression, e.g. \"def parse_date\"."},"path":{"type":"string","description":"Directory or file to search; default is the root."}},"required":["pattern"],"additionalProperties":false}`},
	{EditFile, "Replace old_text with new_text in a file. Copy old_text from a read_files result, with enough surrounding lines that it occurs exactly once. Small copying differences (line endings, trailing spaces, indentation, whitespace, escaped newlines, typographic quotes, blank lines) are tolerated: new_text is then written in the file's own indentation and line endings, and the result says what was tolerated. If old_text occurs more than once nothing is changed, unless replace_all is true, which replaces every occurrence. On a miss the result shows the closest real block with its line numbers and how it differs. Several independent edits may be sent as parallel calls in one turn.",
		`{"type":"object","properties":{"path":{"type":"string"},"old_text":{"type":"string","description":"The text to replace, copied from the file."},"new_text":{"type":"string","description":"The replacement text."},"replace_all":{"type":"boolean","description":"Replace every occurrence of old_text instead of refusing when there are several. Default false."}},"required":["path","old_text","new_text"],"additionalProperties":false}`},
	{WriteFile, "Write a whole file. Use it to create a new file (for example a new test), or to overwrite a file that you have read in this attempt and that has not changed since (an edit_file counts as reading the result). For small changes to an existing file prefer edit_file.",
		`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string","description":"The complete new content of the file."}},"required":["path","content"],"additionalProperties":false}`},
	{RunChecks, "Run the repository's configured checks (tests, linters, type checks) on the current state of your changes and get a short report of what fails. Compared against the checks at the base commit: only failures you introduced, and failures that remain, are reported.",
		`{"type":"object","properties":{},"additionalProperties":false}`},
	{Submit, "Submit your fix when you believe it is complete. The checks run first; if they fail you get the failures back and can continue. If they pass, ticketd checks that a test shows the fix works and has the change reviewed; a refusal at either step also comes back to you. Once the fix is accepted the conversation ends: do not call any tool after a successful submit.",
		`{"type":"object","properties":{"summary":{"type":"string","description":"Two to five sentences for the human reviewer: the cause of the bug and what you changed."},"tests":{"type":"array","items":{"type":"string"},"description":"pytest node ids of the tests you added or that reproduce the bug, e.g. [\"tests/test_core.py::test_empty_list\"]; they must pass for the fix to be accepted."}},"required":["summary"],"additionalProperties":false}`},
	{AskHuman, "Ask the person who filed the ticket one question, only when the report is ambiguous about the intended behaviour (two readings would need different fixes) and nothing in the repository settles it. Never ask for what the code, tests or docs can tell you. Asking ends this attempt without a fix and without charging it: the ticket waits for the answer, and the next attempt starts with your question and the answer. Questions per ticket are limited; when none is left the call is refused: then decide from what you have.",
		`{"type":"object","properties":{"question":{"type":"string","description":"One self-contained question the reporter can answer in a sentence, naming the readings you have to choose between, e.g. \"Should add(2, 3) return 5, or is subtraction intended for refunds (-1)?\""}},"required":["question"],"additionalProperties":false}`},
}

// MakerTools returns the maker's tool definitions in their fixed order; ask_human only when
// ask is true, run_checks only when checks is true. Asking is the night's setting
// (budget.max_questions above 0), the same for every ticket, so the list stays
// byte-identical across the night's requests; offered with asking off, ask_human would cost
// its definition's tokens on every request and invite a call that is refused. checks says
// the repository has checks configured: without any, run_checks has nothing to run, and
// offering it would only invite calls that report nothing.
func MakerTools(ask, checks bool) []openai.Tool {
	out := make([]openai.Tool, 0, len(makerDefs))
	for _, d := range makerDefs {
		if d.name == AskHuman && !ask || d.name == RunChecks && !checks {
			continue
		}
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name:        d.name,
			Description: d.desc,
			Parameters:  json.RawMessage(d.params),
		}})
	}
	return out
}

// ReadOnly reports whether a tool only reads, so calls to it in one turn may run concurrently.
func ReadOnly(name string) bool {
	return name == ReadFiles || name == ListFiles || name == Grep
}

// Result is one file tool call's outcome. Rung is the edit_file matching rung that applied
// (empty for the other tools and for a failed edit), for the tool-call record.
type Result struct {
	Text string
	Rung Rung
}

// Exec runs one file tool with its JSON arguments. The result is text for the model; an error
// is also text for the model (the caller prefixes it with "error: ").
func (w *Workspace) Exec(ctx context.Context, name, args string) (string, error) {
	r, err := w.Run(ctx, name, args)
	return r.Text, err
}

// Run is Exec with the details a caller records beside the text (the edit_file rung).
func (w *Workspace) Run(ctx context.Context, name, args string) (Result, error) {
	switch name {
	case ReadFiles:
		var a struct {
			Paths []json.RawMessage `json:"paths"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return Result{}, err
		}
		reqs, err := readRequests(a.Paths)
		if err != nil {
			return Result{}, err
		}
		text, err := w.ReadFiles(ctx, reqs)
		return Result{Text: text}, err
	case ListFiles:
		var a struct {
			Path string `json:"path"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return Result{}, err
		}
		text, err := w.ListFiles(ctx, a.Path)
		return Result{Text: text}, err
	case Grep:
		var a struct {
			Pattern string `json:"pattern"`
			Path    string `json:"path"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return Result{}, err
		}
		text, err := w.Grep(ctx, a.Pattern, a.Path)
		return Result{Text: text}, err
	case EditFile:
		var a struct {
			Path       string  `json:"path"`
			OldText    *string `json:"old_text"`
			NewText    *string `json:"new_text"`
			ReplaceAll bool    `json:"replace_all"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return Result{}, err
		}
		if a.OldText == nil || a.NewText == nil {
			return Result{}, errors.New("edit_file needs \"path\", \"old_text\" and \"new_text\"")
		}
		r, err := w.EditFile(ctx, a.Path, *a.OldText, *a.NewText, a.ReplaceAll)
		return Result{Text: r.Text, Rung: r.Rung}, err
	case WriteFile:
		var a struct {
			Path    string  `json:"path"`
			Content *string `json:"content"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return Result{}, err
		}
		if a.Content == nil {
			return Result{}, fmt.Errorf("write_file needs \"content\"")
		}
		text, err := w.WriteFile(ctx, a.Path, *a.Content)
		return Result{Text: text}, err
	}
	return Result{}, fmt.Errorf("unknown tool %q: the tools are %s", name, strings.Join(toolNames(), ", "))
}

// readRequests accepts each read_files item as a path string or a {path, start_line,
// end_line} object.
func readRequests(items []json.RawMessage) ([]ReadRequest, error) {
	out := make([]ReadRequest, 0, len(items))
	for i, raw := range items {
		var p string
		if err := json.Unmarshal(raw, &p); err == nil {
			out = append(out, ReadRequest{Path: p})
			continue
		}
		var r ReadRequest
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("paths[%d] is neither a path string nor an object {\"path\", \"start_line\", \"end_line\"} (%v)", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func toolNames() []string {
	out := make([]string, len(makerDefs))
	for i, d := range makerDefs {
		out[i] = d.name
	}
	return out
}

func decodeArgs(args string, v any) error {
	dec := json.NewDecoder(strings.NewReader(ArgsJSON(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments are not valid JSON for this tool (%v); send a JSON object with the documented fields", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		// Two objects run together ({...}{...}) are two calls in one: running the first
		// alone would report it done while the second is silently lost.
		return errors.New("arguments hold more than one JSON value, or text after the object; send exactly one JSON object per tool call, and make several tool calls to do several things")
	}
	return nil
}

// ArgsJSON is a tool call's arguments as the JSON text to decode, for the shapes models
// send that hold exactly one reading: empty arguments read as {}, a Markdown code fence
// around the whole (```json ... ```) is removed, and an object sent as a JSON string
// (encoded twice) is unwrapped. Anything else is returned unchanged, for the decoder to
// refuse with its own error.
func ArgsJSON(args string) string {
	s := strings.TrimSpace(args)
	if rest, ok := strings.CutPrefix(s, "```"); ok && strings.HasSuffix(rest, "```") {
		rest = strings.TrimSuffix(rest, "```")
		rest = strings.TrimPrefix(rest, "json")
		s = strings.TrimSpace(rest)
	}
	if strings.HasPrefix(s, `"`) {
		var inner string
		if json.Unmarshal([]byte(s), &inner) == nil && strings.HasPrefix(strings.TrimSpace(inner), "{") {
			s = strings.TrimSpace(inner)
		}
	}
	if s == "" {
		return "{}"
	}
	return s
}
