package main

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/spell"
	"github.com/ticketd/ticketd/store"
)

// changeJSON is the stable shape of requeue --json and cancel --json.
type changeJSON struct {
	ID              int64       `json:"id"`
	PreviousState   store.State `json:"previous_state"`
	State           store.State `json:"state"`
	CancelRequested bool        `json:"cancel_requested"`
	// NextAttempt, AttemptLimit and KeptBranch say what a requeue did (0 and "" for cancel).
	NextAttempt  int    `json:"next_attempt,omitempty"`
	AttemptLimit int    `json:"attempt_limit,omitempty"`
	KeptBranch   string `json:"kept_branch,omitempty"`
}

func cmdRequeue(e *env, args []string) error {
	fs := e.flagSet("requeue")
	force := fs.Bool("force", false, "also take a running ticket from its worker (one stuck on a dead worker)")
	done := fs.Bool("done", false, "confirm requeueing a done ticket: its fix branch is kept, the new round works on a new branch")
	note := fs.String("note", "", "what the next attempts should know (the maker reads it with the issue)")
	return e.withTicket(fs, args, func(s *store.Store, before store.Ticket) error {
		id := before.ID
		err := s.RequeueTicket(e.ctx, id, e.actor(), store.RequeueOptions{Force: *force, Done: *done, Note: *note})
		switch {
		case errors.Is(err, store.ErrConfirmDone):
			return fmt.Errorf("%w; to go on: ticketctl requeue --done %d", err, id)
		case err != nil && before.State == store.StateRunning && !*force:
			return fmt.Errorf("%w; if its worker is dead: ticketctl requeue --force %d", err, id)
		case err != nil:
			return err
		}
		after, err := s.Get(e.ctx, id)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(changeJSON{ID: id, PreviousState: before.State, State: after.State, CancelRequested: after.CancelRequested,
				NextAttempt: after.Attempts + 1, AttemptLimit: after.AttemptLimit(), KeptBranch: keptBranch(before)})
		}
		what := fmt.Sprintf("the next attempt is %d, up to %d", after.Attempts+1, after.AttemptLimit())
		switch before.State {
		case store.StateParked:
			what = "unparked; attempts kept"
		case store.StateDone:
			what += "; its fix branch " + before.Branch + " is kept, the new round works on a new branch"
		}
		fmt.Fprintf(e.stdout, "ticket %d: %s -> %s (%s)\n", id, before.State, after.State, what)
		return nil
	})
}

// keptBranch is the fix branch a requeue of before keeps ("" unless it was done).
func keptBranch(before store.Ticket) string {
	if before.State == store.StateDone {
		return before.Branch
	}
	return ""
}

func cmdCancel(e *env, args []string) error {
	fs := e.flagSet("cancel")
	reason := fs.String("reason", "cancelled by operator", "why, recorded in the ticket's events")
	return e.withTicket(fs, args, func(s *store.Store, before store.Ticket) error {
		id := before.ID
		after, err := s.RequestCancel(e.ctx, id, e.actor(), *reason)
		if err != nil {
			return err
		}
		running := after == store.StateRunning
		if e.g.json {
			return e.printJSON(changeJSON{ID: id, PreviousState: before.State, State: after, CancelRequested: running})
		}
		switch {
		case running:
			fmt.Fprintf(e.stdout, "ticket %d: cancel requested; its worker stops at its next heartbeat\n", id)
		case before.State == store.StateCancelled:
			fmt.Fprintf(e.stdout, "ticket %d: already cancelled\n", id)
		default:
			fmt.Fprintf(e.stdout, "ticket %d: %s -> %s\n", id, before.State, after)
		}
		return nil
	})
}

// answerJSON is the stable shape of answer --json.
type answerJSON struct {
	ID            int64       `json:"id"`
	PreviousState store.State `json:"previous_state"`
	State         store.State `json:"state"`
	Question      string      `json:"question"`
	Answer        string      `json:"answer"`
}

func cmdAnswer(e *env, args []string) error {
	fs := e.flagSet("answer")
	file := fs.String("file", "", "read the answer from `FILE` (- for standard input)")
	try := `ticketctl answer 12 "5: refunds have their own function"`
	pos, err := e.parse(fs, args, 1, -1)
	if err != nil {
		return err
	}
	id, err := e.parseID(pos[0])
	if err != nil {
		return err
	}
	text := strings.Join(pos[1:], " ")
	switch {
	case *file != "" && text != "":
		return usagef(try, "answer: give the answer as TEXT or with --file, not both")
	case *file != "":
		var data []byte
		if *file == "-" {
			data, err = io.ReadAll(e.stdin)
		} else {
			data, err = os.ReadFile(*file)
		}
		if err != nil {
			return fmt.Errorf("answer: read --file %s: %w", *file, err)
		}
		text = string(data)
	}
	if strings.TrimSpace(text) == "" {
		return usagef(try, "answer: the answer is empty; give it as TEXT or with --file")
	}
	return e.withStore(func(s *store.Store) error {
		before, err := s.Get(e.ctx, id)
		if err != nil {
			return notFoundHint(err)
		}
		if before.State != store.StateNeedsInfo {
			return fmt.Errorf("%w: ticket %d is %s: it asked no question that waits for an answer (ticketctl escalations lists those that do)", store.ErrInvalidTransition, id, before.State)
		}
		if err := s.Answer(e.ctx, id, text, e.actor()); err != nil {
			return err
		}
		after, err := s.Get(e.ctx, id)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(answerJSON{ID: id, PreviousState: before.State, State: after.State, Question: before.Question, Answer: strings.TrimSpace(text)})
		}
		fmt.Fprintf(e.stdout, "ticket %d: %s -> %s (answered; the next attempt reads the question and the answer)\n", id, before.State, after.State)
		return nil
	})
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// addJSON is the stable shape of add --json.
type addJSON struct {
	ID         int64       `json:"id"`
	Created    bool        `json:"created"`
	Source     string      `json:"source"`
	ExternalID string      `json:"external_id"`
	State      store.State `json:"state"`
}

func cmdAdd(e *env, args []string) error {
	fs := e.flagSet("add")
	var (
		nt       = store.NewTicket{Source: "ticketctl"}
		bodyFile string
		labels   stringList
	)
	fs.StringVar(&nt.Repo, "repo", "", "repository name, as under repos: in the config (required)")
	fs.StringVar(&nt.Title, "title", "", "one-line summary of the problem (required)")
	fs.StringVar(&nt.Body, "body", "", "the issue text: symptom and expected behaviour")
	fs.StringVar(&bodyFile, "body-file", "", "read the body from `FILE` (- for standard input)")
	fs.Var(&labels, "label", "a `LABEL` (repeatable, or comma separated)")
	fs.IntVar(&nt.Priority, "priority", 0, "higher is claimed first")
	fs.IntVar(&nt.MaxAttempts, "max-attempts", 0, "attempts before escalation (0: the store's default)")
	if _, err := e.parse(fs, args, 0, 0); err != nil {
		return err
	}
	try := `ticketctl add --repo sample --title "Average of an empty list crashes" --body-file issue.md`
	switch {
	case strings.TrimSpace(nt.Repo) == "":
		return usagef(try, "add: --repo is required")
	case strings.TrimSpace(nt.Title) == "":
		return usagef(try, "add: --title is required")
	case nt.Body != "" && bodyFile != "":
		return usagef(try, "add: give --body or --body-file, not both")
	case nt.MaxAttempts < 0:
		return usagef(try, "add: --max-attempts %d: want 0 (default) or more", nt.MaxAttempts)
	}
	if bodyFile != "" {
		var (
			data []byte
			err  error
		)
		if bodyFile == "-" {
			data, err = io.ReadAll(e.stdin)
		} else {
			data, err = os.ReadFile(bodyFile)
		}
		if err != nil {
			return fmt.Errorf("add: read --body-file %s: %w", bodyFile, err)
		}
		nt.Body = string(data)
	}
	nt.Labels = labels
	externalID, err := newExternalID(time.Now())
	if err != nil {
		return err
	}
	nt.ExternalID = externalID
	return e.withStore(func(s *store.Store) error {
		if e.cfg != nil {
			names := slices.Sorted(maps.Keys(e.cfg.Repos))
			if _, ok := e.cfg.Repos[nt.Repo]; !ok {
				return usagef("ticketctl add --repo "+cmp.Or(strings.Join(names, "|"), "NAME")+" ...",
					"add: repository %q is not under repos: in %s%s (have: %s)", nt.Repo, e.g.config, spell.Hint(nt.Repo, names), cmp.Or(strings.Join(names, ", "), "none"))
			}
		} else {
			fmt.Fprintf(e.stderr, "note: repository %q is not checked: pass --config FILE to check it against repos: (a ticket for a repository the config does not list fails when it is claimed)\n", nt.Repo)
		}
		id, created, err := s.Enqueue(e.ctx, nt)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(addJSON{ID: id, Created: created, Source: nt.Source, ExternalID: nt.ExternalID, State: store.StateQueued})
		}
		fmt.Fprintf(e.stdout, "%d\n", id)
		fmt.Fprintf(e.stderr, "ticket %d queued (source ticketctl, external id %s); follow it with: ticketctl show %d\n", id, nt.ExternalID, id)
		return nil
	})
}

// newExternalID makes a unique id for a hand-made ticket: sortable time plus randomness, so two
// operators adding the same title in the same millisecond still get two tickets.
func newExternalID(now time.Time) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("add: make external id: %w", err)
	}
	return now.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:]), nil
}

var _ flag.Value = (*stringList)(nil)
