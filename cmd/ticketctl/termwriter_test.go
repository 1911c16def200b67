package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

func TestTermWriter(t *testing.T) {
	tests := []struct {
		name, in, text, json string
	}{
		{"plain", "Average of [] crashes\n", "Average of [] crashes\n", "Average of [] crashes\n"},
		{"tabs and newlines kept", "a\tb\nc\n", "a\tb\nc\n", "a\tb\nc\n"},
		{"CSI colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\u001b[31mred\u001b[0m`},
		{"OSC window title with BEL", "\x1b]0;pwned\x07x", `\x1b]0;pwned\x07x`, `\u001b]0;pwned\u0007x`},
		{"carriage return overwrite", "ok\rFAIL", `ok\x0dFAIL`, `ok\u000dFAIL`},
		{"backspace and DEL", "a\bb\x7f", `a\x08b\x7f`, `a\u0008b\u007f`},
		{"8-bit CSI as UTF-8", "a\u009b31mb", `a\x9b31mb`, `a\u009b31mb`},
		{"bidi override", "abc\u202edcb", `abc\u202edcb`, `abc\u202edcb`},
		{"invalid UTF-8", "a\xffb", `a\xffb`, `a\ufffdb`},
		{"non-ASCII text kept", "café – naïve ✓", "café – naïve ✓", "café – naïve ✓"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []struct {
				json bool
				want string
			}{{false, tt.text}, {true, tt.json}} {
				var b bytes.Buffer
				w := newTermWriter(&b, mode.json)
				n, err := w.Write([]byte(tt.in))
				if err != nil || n != len(tt.in) {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", tt.in, n, err, len(tt.in))
				}
				if got := b.String(); got != mode.want {
					t.Errorf("json=%v: Write(%q) wrote %q, want %q", mode.json, tt.in, got, mode.want)
				}
			}
		})
	}
}

// A rune split across two writes (tabwriter and fmt may cut anywhere) is kept whole.
func TestTermWriterSplitRune(t *testing.T) {
	in := []byte("é\u009b✓")
	for cut := 1; cut < len(in); cut++ {
		var b bytes.Buffer
		w := newTermWriter(&b, false)
		w.Write(in[:cut])
		w.Write(in[cut:])
		if got, want := b.String(), `é\x9b✓`; got != want {
			t.Errorf("cut at %d: wrote %q, want %q", cut, got, want)
		}
	}
}

// Every command that prints untrusted text prints it defused, and --json keeps it exactly.
func TestHostileTextIsDefused(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "ticketd.db")
	s, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	title := "Crash \x1b]0;owned\x07 on \x1b[2J\x1b[Hempty list\u202e"
	body := "steps:\r\n\x1b[8mhidden\x1b[0m \u009b6n"
	id, _, err := s.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "x", Repo: "app", Title: title, Body: body, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Claim(ctx, "w1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordToolCall(ctx, store.ToolCall{TicketID: id, Attempt: 1, Step: 1, Tool: "read_files",
		Args: `{"paths":["a.py"]}`, Result: "print('\x1b[31m')", OK: true, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fail(ctx, id, l.Token, store.Failure{Kind: store.FailFix, Reason: "model said \x1b[1mno\x1b[0m"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	ids := strconv.FormatInt(id, 10)
	for _, args := range [][]string{{"list"}, {"show", ids}, {"logs", ids}, {"escalations"}} {
		r := ctl(t, append([]string{"--db", db}, args...)...)
		if r.code != exitOK {
			t.Fatalf("%v: exit %d, stderr %s", args, r.code, r.stderr)
		}
		for _, out := range []string{r.stdout, r.stderr} {
			for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u202e", "\r"} {
				if strings.Contains(out, bad) {
					t.Errorf("%v printed a raw %q:\n%s", args, bad, out)
				}
			}
		}
		if args[0] == "show" {
			// Intake removed the C0 controls of the title (store.CleanText); a reason the
			// model wrote still holds them, and is defused.
			mustContain(t, "show", r.stdout, `model said \x1b[1mno`)
		}
	}

	var got struct {
		Ticket struct {
			Title string `json:"title"`
			Body  string `json:"body"`
		} `json:"ticket"`
	}
	r := ctl(t, "--db", db, "--json", "show", ids)
	if strings.Contains(r.stdout, "\u009b") || strings.Contains(r.stdout, "\u202e") {
		t.Errorf("--json printed a raw C1 or bidi control:\n%s", r.stdout)
	}
	decode(t, r, &got)
	if want := store.CleanText(title); got.Ticket.Title != want || got.Ticket.Body != store.CleanText(body) {
		t.Errorf("--json changed the text:\ntitle %q\n want %q\nbody %q\n want %q", got.Ticket.Title, want, got.Ticket.Body, store.CleanText(body))
	}
}
