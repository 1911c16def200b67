package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
)

// mapReader reads from a map, as FileAtBase reads a base commit; a value "<symlink>" is an
// entry that is not a regular file.
func mapReader(files map[string]string) FileReader {
	return func(_ context.Context, path string) ([]byte, bool, error) {
		s, ok := files[path]
		if !ok {
			return nil, false, nil
		}
		if s == "<symlink>" {
			return nil, false, errors.New("not a regular file at the base commit")
		}
		return []byte(s), true, nil
	}
}

func TestReadInstructionsOrder(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		names     []string
		wantFiles []string
		wantErr   bool
	}{
		{"agents first", map[string]string{"AGENTS.md": "a", "CLAUDE.md": "c", "CONTRIBUTING.md": "x"}, nil, []string{"AGENTS.md"}, false},
		{"claude when no agents", map[string]string{"CLAUDE.md": "c", "CONTRIBUTING.md": "x"}, nil, []string{"CLAUDE.md"}, false},
		{"copilot before contributing", map[string]string{".github/copilot-instructions.md": "g", "CONTRIBUTING.md": "x"}, nil, []string{".github/copilot-instructions.md"}, false},
		{"contributing last", map[string]string{"CONTRIBUTING.md": "x", "README.md": "r"}, nil, []string{"CONTRIBUTING.md"}, false},
		{"none", map[string]string{"README.md": "r"}, nil, nil, false},
		{"an empty AGENTS.md falls through", map[string]string{"AGENTS.md": " \n\n", "CLAUDE.md": "c"}, nil, []string{"CLAUDE.md"}, false},
		{"configured: all present, in order", map[string]string{"docs/agents.md": "d", "STYLE.md": "s", "AGENTS.md": "a"}, []string{"STYLE.md", "missing.md", "docs/agents.md"}, []string{"STYLE.md", "docs/agents.md"}, false},
		{"configured empty: none", map[string]string{"AGENTS.md": "a"}, []string{}, nil, false},
		{"a symlink is skipped and said", map[string]string{"AGENTS.md": "<symlink>", "CLAUDE.md": "c"}, nil, []string{"CLAUDE.md"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ins, err := ReadInstructions(context.Background(), mapReader(tt.files), tt.names)
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, want error %v", err, tt.wantErr)
			}
			if strings.Join(ins.Files, ",") != strings.Join(tt.wantFiles, ",") {
				t.Errorf("files = %q, want %q", ins.Files, tt.wantFiles)
			}
			if (ins.Block == "") != (len(tt.wantFiles) == 0) {
				t.Errorf("block = %q with files %q", ins.Block, ins.Files)
			}
			for _, f := range tt.wantFiles {
				if !strings.Contains(ins.Block, "----- begin "+f+" (repository text) -----\n"+tt.files[f]+"\n----- end "+f+" -----") {
					t.Errorf("block lacks %s framed:\n%s", f, ins.Block)
				}
			}
		})
	}
}

func TestReadInstructionsCap(t *testing.T) {
	line := strings.Repeat("x", 99) + "\n"
	long := strings.Repeat(line, 120) // 12,000 bytes
	ins, err := ReadInstructions(context.Background(), mapReader(map[string]string{"AGENTS.md": long, "MORE.md": "more"}), []string{"AGENTS.md", "MORE.md"})
	if err != nil {
		t.Fatal(err)
	}
	if !ins.Cut || ins.Bytes != len(long)+len("more\n") {
		t.Errorf("cut = %v, bytes = %d", ins.Cut, ins.Bytes)
	}
	body := ins.Block[strings.Index(ins.Block, "(repository text) -----\n")+len("(repository text) -----\n"):]
	body = body[:strings.Index(body, "[ticketd:")]
	if len(body) > MaxInstructionBytes || len(body) < MaxInstructionBytes-len(line) || !strings.HasSuffix(body, "\n") {
		t.Errorf("kept %d bytes (cap %d), want a cut at a line end just under the cap", len(body), MaxInstructionBytes)
	}
	for _, want := range []string{"AGENTS.md was cut here, after 8100 of its 12000 bytes", "MORE.md is not shown"} {
		if !strings.Contains(ins.Block, want) {
			t.Errorf("block lacks the note %q", want)
		}
	}
	// Repository text cannot smuggle control characters or a different line ending in.
	ins, _ = ReadInstructions(context.Background(), mapReader(map[string]string{"AGENTS.md": "run\r\npytest\x00\x1b[31m\n"}), nil)
	if !strings.Contains(ins.Block, "run\npytest[31m\n") {
		t.Errorf("block = %q", ins.Block)
	}
}

// TestInstructionsFollowTheStaticPrefix pins where the repository instructions go: after the
// static prefix (tools and system message, which are the same bytes with and without them)
// and before anything of the ticket, byte-identical for two tickets of the same repository.
func TestInstructionsFollowTheStaticPrefix(t *testing.T) {
	ins, err := ReadInstructions(context.Background(), mapReader(map[string]string{"AGENTS.md": "Run the tests with `make test`.\nNever edit vendor/.\n"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	open := func(role model.Role, tk Ticket, dir, block string) []string {
		a := newAttempt(&Runner{Now: func() time.Time { return now }}, Job{Ticket: tk, Dir: dir, RepoMap: "app/x.py\n", Instructions: block}, now)
		msgs := a.ask.opening(role, nil)
		return []string{msgs[0].Content, msgs[1].Content}
	}
	t1 := Ticket{ID: 1, Attempt: 1, Title: "Average crashes", Body: "ZeroDivisionError", Repo: "app"}
	t2 := Ticket{ID: 9, Attempt: 2, Title: "Totals off", Body: "other", Repo: "app", Labels: []string{"bug"}}
	for _, role := range model.Roles {
		without := open(role, t1, "/w/1", "")
		with1 := open(role, t1, "/w/1", ins.Block)
		with2 := open(role, t2, "/w/9", ins.Block)
		if with1[0] != without[0] || with2[0] != without[0] {
			t.Errorf("%s: the system message changes with the instructions", role)
		}
		if strings.Contains(with1[0], "make test") {
			t.Errorf("%s: the instructions are in the static system message", role)
		}
		user := with1[1]
		repo := RepoContext("app", ins.Block, "app/x.py\n")
		if !strings.HasPrefix(user, repo) || !strings.HasPrefix(with2[1], repo) {
			t.Errorf("%s: the user message does not open with the same repository part for both tickets", role)
		}
		at, name, files, ticket := strings.Index(user, "make test"), strings.Index(user, "Name: app"), strings.Index(user, "Files:\n"), strings.Index(user, "# Ticket 1")
		if !(name < at && at < files && files < ticket) {
			t.Errorf("%s: order name %d < instructions %d < file map %d < ticket %d does not hold", role, name, at, files, ticket)
		}
	}
	toolJSON, _ := json.Marshal(tools.MakerTools(true, true))
	if strings.Contains(string(toolJSON), "make test") {
		t.Error("the tool block holds repository text")
	}
}

// FuzzInstructions: whatever bytes a repository's AGENTS.md holds, the block is valid UTF-8,
// holds no control character but tab and newline, and keeps at most MaxInstructionBytes of
// the file's text.
func FuzzInstructions(f *testing.F) {
	f.Add([]byte("Run `make test`.\n"), 10)
	f.Add([]byte("\xff\xfe\r\n\x00é"), 9000)
	f.Fuzz(func(t *testing.T, data []byte, repeat int) {
		text := strings.Repeat(string(data), 1+max(repeat, 0)%10_000)
		ins, err := ReadInstructions(context.Background(), mapReader(map[string]string{"AGENTS.md": text}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(ins.Block) {
			t.Fatalf("block is not valid UTF-8")
		}
		for _, r := range ins.Block {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
				t.Fatalf("block holds control character %U", r)
			}
		}
		if ins.Block == "" {
			return
		}
		start := strings.Index(ins.Block, "(repository text) -----\n") + len("(repository text) -----\n")
		end := strings.LastIndex(ins.Block, "----- end AGENTS.md -----")
		body := ins.Block[start:end]
		if i := strings.Index(body, "[ticketd: AGENTS.md was cut here"); i >= 0 {
			body = body[:i]
		}
		if len(body) > MaxInstructionBytes+1 { // +1: the newline a cut inside a line gets
			t.Fatalf("kept %d bytes of repository text, cap %d", len(body), MaxInstructionBytes)
		}
	})
}
