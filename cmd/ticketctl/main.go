// Command ticketctl is the operator's view of and hand on ticketd's queue: list and inspect
// tickets, requeue or cancel them, add one by hand, read a night's figures and prune old
// records. It opens the same SQLite file as the daemon (WAL), does one thing and closes, so it
// is safe to run while the daemon works.
//
// Results go to stdout (a table, or a stable JSON document with --json); errors, hints and
// notes go to stderr. Exit codes are part of the interface: see exitHelp.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ticketd/ticketd/store"
)

// Exit codes scripts can rely on.
const (
	exitOK       = 0
	exitError    = 1 // runtime error: database unreadable, busy, I/O ...
	exitUsage    = 2 // bad command line: unknown command or flag, missing argument, no database named
	exitNotFound = 3 // the ticket (or run) id does not exist
	exitRefused  = 4 // the ticket's current state does not allow the action (e.g. requeue a queued ticket)
)

const exitHelp = `Exit codes:
  0  success
  1  runtime error (database missing or unreadable, busy, I/O)
  2  usage error (unknown command or flag, bad argument, no database named)
  3  not found (unknown ticket or run id)
  4  refused: the ticket's state does not allow the action (e.g. requeue a queued ticket)`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one ticketctl command line and returns its exit code. Tests call it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Everything printed may carry untrusted text (issue titles, model output): see termWriter.
	e := &env{ctx: ctx, stdout: newTermWriter(stdout, false), jsonOut: newTermWriter(stdout, true),
		stderr: newTermWriter(stderr, false), lookupEnv: os.LookupEnv, stdin: os.Stdin}
	err := e.dispatch(args)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errHelpShown) {
		return exitOK
	}
	code := exitCode(err)
	fmt.Fprintf(e.stderr, "ticketctl: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) && ue.hint != "" {
		fmt.Fprintf(e.stderr, "try: %s\n", ue.hint)
	}
	return code
}

// exitCode maps an error to the documented exit code.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrRunNotFound):
		return exitNotFound
	case errors.Is(err, store.ErrInvalidTransition), errors.Is(err, store.ErrConfirmDone), errors.Is(err, store.ErrRoundsSpent):
		return exitRefused
	default:
		return exitError
	}
}

// usageError is a mistake on the command line; hint is the command to try instead.
type usageError struct {
	msg  string
	hint string
}

func (e *usageError) Error() string { return e.msg }

func usagef(hint, format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...), hint: hint}
}

// errHelpShown ends a command after it printed its help on request (-h): exit 0.
var errHelpShown = errors.New("help shown")
