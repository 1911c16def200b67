package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/ticketd/ticketd/store"
)

// logEntry is one line of a ticket's timeline; exactly one of Event, ModelCall, ToolCall is set.
type logEntry struct {
	At        time.Time        `json:"at"`
	Type      string           `json:"type"` // "event", "model_call" or "tool_call"
	Attempt   int              `json:"attempt"`
	Event     *store.Event     `json:"event,omitempty"`
	ModelCall *store.ModelCall `json:"model_call,omitempty"`
	ToolCall  *store.ToolCall  `json:"tool_call,omitempty"`
}

// timeline merges a ticket's records in time order; at equal times events come first, then
// model calls, then tool calls, each in the order it was written.
func timeline(events []store.Event, calls []store.ModelCall, tools []store.ToolCall) []logEntry {
	out := make([]logEntry, 0, len(events)+len(calls)+len(tools))
	for i := range events {
		out = append(out, logEntry{At: events[i].At, Type: "event", Attempt: events[i].Attempt, Event: &events[i]})
	}
	for i := range calls {
		out = append(out, logEntry{At: calls[i].StartedAt, Type: "model_call", Attempt: calls[i].Attempt, ModelCall: &calls[i]})
	}
	for i := range tools {
		out = append(out, logEntry{At: tools[i].At, Type: "tool_call", Attempt: tools[i].Attempt, ToolCall: &tools[i]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

func (l logEntry) detail() (kind, text string) {
	switch {
	case l.Event != nil:
		ev := l.Event
		text = fmt.Sprintf("%s -> %s", orDash(string(ev.FromState)), orDash(string(ev.ToState)))
		if ev.Actor != "" {
			text += " by " + ev.Actor
		}
		if ev.Reason != "" {
			text += ": " + clip(ev.Reason, 120)
		}
		return string(ev.Kind), text
	case l.ModelCall != nil:
		c := l.ModelCall
		cost := "cost unknown"
		if c.CostUSD != nil {
			cost = fmtCost(*c.CostUSD, false)
		}
		text = fmt.Sprintf("%s %s: prompt %d (cached %d), completion %d, %s, %s, finish %s",
			c.Role, c.Model, c.PromptTokens, c.CachedTokens, c.CompletionTokens, cost, fmtDur(c.Latency), orDash(c.FinishReason))
		if c.ErrorClass != "" || c.Error != "" {
			text += fmt.Sprintf(", error %s: %s", orDash(c.ErrorClass), clip(c.Error, 80))
		}
		if c.Retries > 0 {
			text += fmt.Sprintf(", %d retries", c.Retries)
		}
		if c.Continuations > 0 {
			text += fmt.Sprintf(", %d continuation(s) of an answer cut at the output limit", c.Continuations)
		}
		return "model", text
	default:
		c := l.ToolCall
		status := "ok"
		if !c.OK {
			status = "failed"
		}
		return "tool", fmt.Sprintf("step %d %s %s (%s) %s -> %s", c.Step, c.Tool, status, fmtDur(c.Duration), clip(c.Args, 60), clip(c.Result, 60))
	}
}

func cmdLogs(e *env, args []string) error {
	fs := e.flagSet("logs")
	attempt := fs.Int("attempt", 0, "only attempt `N` (0: all)")
	return e.withTicket(fs, args, func(s *store.Store, t store.Ticket) error {
		id := t.ID
		events, err := s.Events(e.ctx, id)
		if err != nil {
			return err
		}
		calls, err := s.ModelCalls(e.ctx, id)
		if err != nil {
			return err
		}
		tools, err := s.ToolCalls(e.ctx, id)
		if err != nil {
			return err
		}
		entries := timeline(events, calls, tools)
		if *attempt > 0 {
			kept := entries[:0]
			for _, l := range entries {
				if l.Attempt == *attempt {
					kept = append(kept, l)
				}
			}
			entries = kept
		}
		if e.g.json {
			return e.printJSON(entries)
		}
		tw := e.table()
		fmt.Fprintln(tw, "TIME\tATTEMPT\tKIND\tDETAIL")
		for _, l := range entries {
			kind, text := l.detail()
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", l.At.Local().Format("2006-01-02 15:04:05.000"), l.Attempt, kind, text)
		}
		return tw.Flush()
	})
}
