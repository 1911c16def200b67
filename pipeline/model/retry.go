package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// maxRetryAfter caps a server's Retry-After so a bogus header cannot park a worker for
// the night; a longer wait is better spent releasing the ticket.
const maxRetryAfter = 10 * time.Minute

// fault is the classification of one failed HTTP attempt.
type fault struct {
	class     string // ErrorClass*
	status    int    // HTTP status, 0 when none (for a 2xx carrying an error, the one it names)
	wire      int    // the status on the wire when it differs in kind: a 2xx carrying an error
	retryable bool
	apiMsg    string // the server's error message, if any
	text      string // the same whole, for reading (serverError.text); never shown
	// anyRequest says the answer does not depend on what the request carried (see
	// Fault.AnyRequest).
	anyRequest bool
	// bound names the setting that bounded a time-out without a status when it was not the
	// endpoint's own timeout (models.preflight_timeout); "" means the endpoint's.
	bound string
}

// classify sorts an error from go-openai into an error class. parent is the caller's
// context: when it has ended, the failure is a cancellation, not a fault of the endpoint.
// The HTTP status and raw body come from the wire (ws): go-openai wraps a body whose
// error is a string, or that is not JSON, in a RequestError around an empty APIError, so
// its own values lose the server's words.
func classify(parent context.Context, err error, ws *wireState) fault {
	if parent.Err() != nil {
		return fault{class: ErrorClassCanceled}
	}
	if ws != nil && ws.status >= 400 {
		return classifyHTTP(ws.status, parseErrorBody(ws.errBody))
	}
	if ws != nil && ws.oversize > 0 {
		size := fmt.Sprintf("more than %d bytes", ws.maxAnswer)
		if ws.oversizeExact {
			size = fmt.Sprintf("%d bytes", ws.oversize)
		}
		// No request earns it: an answer within the output limit ticketd asks for (32000
		// tokens by default, a few hundred KB of JSON) is far below the default 4 MiB, so the
		// server ignored that limit or sent something else. It is never the ticket's to pay
		// for, and two in a row stop the night's claims.
		return fault{class: ErrorClassBadResponse, status: ws.status, anyRequest: true,
			apiMsg: fmt.Sprintf("the answer is %s, over the endpoint's max_answer_bytes (%d): not read whole, not sent back", size, ws.maxAnswer)}
	}
	if ws != nil && ws.truncated {
		return fault{class: ErrorClassTruncated, retryable: true, status: ws.status}
	}
	if ws != nil && ws.sse {
		return fault{class: ErrorClassBadResponse, status: ws.status, anyRequest: true,
			apiMsg: "the server streamed its answer (text/event-stream) although ticketd asked for none (stream: false); ticketd reads whole JSON answers only"}
	}
	if ws != nil && ws.badBody != nil {
		said := "the answer is not a JSON chat completion; it starts: " + clean(string(ws.badBody))
		if len(ws.badBody) == 0 {
			said = "the answer's body is empty"
		}
		return fault{class: ErrorClassBadResponse, status: ws.status, apiMsg: said, anyRequest: !looksJSON(ws.badBody)}
	}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode >= 400:
		return classifyHTTP(reqErr.HTTPStatusCode, parseErrorBody(reqErr.Body))
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode >= 400:
		se := serverError{msg: clean(apiErr.Message), text: strings.Join(strings.Fields(apiErr.Message), " "), typ: apiErr.Type, found: true}
		if s, ok := apiErr.Code.(string); ok {
			se.code = s
		}
		return classifyHTTP(apiErr.HTTPStatusCode, se)
	}

	var netErr net.Error
	var urlErr *url.Error
	var synErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fault{class: ErrorClassTimeout, retryable: true}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.As(err, &urlErr), errors.As(err, &netErr):
		return fault{class: ErrorClassNetwork, retryable: true}
	case errors.As(err, &synErr), errors.As(err, &typeErr):
		f := fault{class: ErrorClassBadResponse}
		if ws != nil {
			f.status = ws.status
		}
		return f
	}
	return fault{class: ErrorClassClient}
}

// transportClass reports whether a fault class says the endpoint itself is failing (the
// circuit breaker counts these). A 429 is a live server asking to slow down; it is
// waited out with its Retry-After, not counted.
func transportClass(class string) bool {
	switch class {
	case ErrorClassServer, ErrorClassNetwork, ErrorClassTimeout, ErrorClassTruncated, ErrorClassEmptyAnswer:
		return true
	}
	return false
}

// backoff is the wait before retry number n (1-based): exponential from base, capped
// at maxDelay, with "equal jitter" (half fixed, half random) so that three workers hit
// by the same 429 do not come back in step. jitter returns a value in [0, 1).
func backoff(n int, base, maxDelay time.Duration, jitter func() float64) time.Duration {
	d := float64(base) * math.Pow(2, float64(n-1))
	d = min(d, float64(maxDelay))
	return time.Duration(d/2 + jitter()*d/2)
}

// parseRetryAfter reads a Retry-After value: delay-seconds (fractions tolerated), an
// HTTP date, or "<n>ms" (from OpenAI's retry-after-ms). It reports false for an absent
// or unreadable value; the result is within [0, maxRetryAfter].
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if ms, ok := strings.CutSuffix(v, "ms"); ok {
		f, err := strconv.ParseFloat(ms, 64)
		if err != nil || math.IsNaN(f) || f < 0 {
			return 0, false
		}
		d = time.Duration(min(f, float64(maxRetryAfter/time.Millisecond)) * float64(time.Millisecond))
	} else if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || f < 0 {
			return 0, false
		}
		d = time.Duration(min(f, maxRetryAfter.Seconds()) * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(t.Sub(now), 0)
	} else {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

// looksJSON says whether body starts like a JSON value: an answer that does not (an HTML
// page, plain text, nothing) is no completion whatever the request carried.
func looksJSON(body []byte) bool {
	t := strings.TrimSpace(string(body))
	return strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")
}
