package model

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Fault is the detail of a request that failed on the endpoint's side of the wire, for
// callers that must tell one systemic failure (every request refused the same way) from a
// ticket's own trouble; find it with errors.As. Its text is the error's, unchanged.
type Fault struct {
	Role     Role
	Endpoint string
	// Class is one of the ErrorClass* constants.
	Class string
	// Status is the HTTP status as the server sent it: 200 for a 2xx answer that carried an
	// error instead of a completion; 0 when no answer came (or none was sent).
	Status int
	// Said is the server's own words (cleaned), or what ticketd saw in their place (the
	// first characters of an unparseable body, that the server streamed).
	Said string
	// ResetAt is, for a rate limit (Class rate_limit), when the provider said it lifts:
	// the ticket waits until then instead of failing. Zero when it did not say.
	ResetAt time.Time
	// AnyRequest says the failure does not depend on what the request carried: a 401 (the
	// key), a 404 (the model or the path), an answer that is not JSON at all (a proxy's login
	// page) or is larger than max_answer_bytes. Every ticket would meet it; a 400, a 403 or an answer without choices may be
	// about one ticket's request (a content filter, a moderation flag).
	AnyRequest bool
	err        error
}

func (f *Fault) Error() string {
	if f.err == nil { // one built by hand (a caller's test): its fields say it
		return fmt.Sprintf("endpoint %s: %s (HTTP %d): %s", f.Endpoint, f.Class, f.Status, f.Said)
	}
	return f.err.Error()
}
func (f *Fault) Unwrap() error { return f.err }

var digitsRe = regexp.MustCompile(`[0-9]+`)

// Signature is the same for the same failure met by different tickets: the endpoint, the
// class, the status and the server's words with numbers removed (token counts and request
// ids differ between tickets, the refused parameter does not).
func (f *Fault) Signature() string {
	return fmt.Sprintf("%s %s %d %s", f.Endpoint, f.Class, f.Status, strings.ToLower(digitsRe.ReplaceAllString(f.Said, "#")))
}

// statusText names an HTTP status as sent: "HTTP 400", or for a 2xx that carried an error
// "HTTP 200 carrying an error (code 404)", so a 200 is never reported as something else.
func (f fault) statusText() string {
	switch {
	case f.wire/100 == 2 && f.status != f.wire:
		return fmt.Sprintf("HTTP %d carrying an error (code %d)", f.wire, f.status)
	case f.wire/100 == 2:
		return fmt.Sprintf("HTTP %d carrying an error", f.wire)
	case f.status != 0:
		return fmt.Sprintf("HTTP %d", f.status)
	}
	return ""
}

// wireStatus is the status to record on a Fault: the one on the wire.
func (f fault) wireStatus() int {
	if f.wire != 0 {
		return f.wire
	}
	return f.status
}

// emptyAnswer is the fault of the n-th answer in a row without choices. OpenRouter documents
// such answers for a model warming up from a cold start or a provider scaling up, "from a
// few seconds to a few minutes", and says to retry ("When No Content is Generated",
// openrouter.ai/docs/api-reference/errors): a transport fault, retried within the call like
// a 5xx (retry.max_retries), then the ticket is released unspent, and counted by the
// endpoint's breaker, whose probe tells when the model answers again.
func emptyAnswer(status, n int) fault {
	said := "the answer has no choices"
	if n > 1 {
		said = fmt.Sprintf("the answer has no choices, %d times in a row", n)
	}
	return fault{class: ErrorClassEmptyAnswer, status: status, apiMsg: said, retryable: true}
}

// interruptedAnswer is the fault of an answer whose generation the server broke off on its
// side (answerInfo.interrupted): a server fault, retried, whatever status its error object
// names, unless its words say the prompt overflowed the context or set off a filter.
func interruptedAnswer(status int, info answerInfo) fault {
	f := classifyHTTP(status, info.interruptErr)
	if f.class == ErrorClassRejected || f.class == ErrorClassServer {
		f.class, f.retryable = ErrorClassServer, true
	}
	what := fmt.Sprintf("the server broke off its answer (finish_reason %q)", info.interrupted)
	if f.apiMsg == "" {
		f.apiMsg = what
	} else {
		f.apiMsg = what + ": " + f.apiMsg
	}
	return f
}
