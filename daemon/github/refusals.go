package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"
)

// Backing off a write GitHub refuses for a reason only a human removes (a token without
// Pull requests write, SAML SSO not authorized, an archived repository, a locked issue, a
// branch with no commits beyond the base): retried at every poll it would cost requests
// and pushes all night and change nothing. The ticket stays unpublished, so nothing is
// lost; each pass still reports the refusal (Syncer.Failing, the night's outcome) in
// GitHub's words, without asking again until its hold ends.

const (
	// refusalBackoff is the first hold after a refusal; each refusal more doubles it, up to
	// refusalBackoffCap.
	refusalBackoff    = 2 * time.Minute
	refusalBackoffCap = time.Hour
)

// refusals are the writes held back after a refusal, by key ("pull request 12"). The
// zero value is ready. A restart (a new token or config) starts with none; Reset, at the
// start of a night, forgets them.
type refusals struct {
	mu   sync.Mutex
	held map[string]*refusal
}

type refusal struct {
	err   error
	times int
	until time.Time
}

// needsHuman reports whether GitHub refused a write in a way asking again will not change:
// refused credentials or access (401, 403 other than a rate limit, 404, 410) or a request it
// will not process (422). A pull request that exists though the listing shows none yet is
// GitHub catching up, not a refusal.
func needsHuman(err error) bool {
	if err == nil || rateLimited(err) || unprocessable(err, "a pull request already exists") {
		return false
	}
	switch statusOf(err) {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone, http.StatusUnprocessableEntity:
		return true
	case 0:
		return pushRefused.MatchString(err.Error())
	}
	return false
}

// pushRefused matches a git push (worktree.Push) the remote refused: its verdict on the
// branch (a hook, a protected branch, a non-fast-forward) or an HTTP 401, 403 or 404 (a
// token without Contents write, SSO, an archived repository). A push that could not reach
// the remote, or met its 5xx, is not a refusal.
var pushRefused = regexp.MustCompile(`: the remote refused it: |The requested URL returned error: 40[134]\b`)

// heldRefusal is a refusal a write is held back by. Repeat is false when it starts (or
// GitHub's words changed): the pass that met it is worth an error in the log. It is true
// while the same refusal goes on, re-reported without asking GitHub or met again when the
// hold ended: the pass still fails (Syncer.Failing), but the log says it at debug level.
type heldRefusal struct {
	err    error
	times  int
	until  time.Time
	repeat bool
}

func (h *heldRefusal) Error() string {
	return fmt.Sprintf("%v (refused %d time(s) in a row; ticketd asks again at %s, or at once at the next night or after a restart)",
		h.err, h.times, h.until.UTC().Format(time.RFC3339))
}

func (h *heldRefusal) Unwrap() error { return h.err }

// try runs fn for key unless a refusal holds it back: then the refusal is returned again,
// saying when key is tried next, and GitHub is not asked. A refusal that ends (fn asked and
// was not refused) is logged on log, once.
func (r *refusals) try(key string, now func() time.Time, log *slog.Logger, fn func() (string, error)) (string, error) {
	r.mu.Lock()
	var last refusal
	if rf := r.held[key]; rf != nil {
		last = *rf
	}
	r.mu.Unlock()
	if last.err != nil && now().Before(last.until) {
		return "", &heldRefusal{err: last.err, times: last.times, until: last.until, repeat: true}
	}
	url, err := fn()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil && (rateLimited(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return url, err // GitHub was not asked, or did not answer: the backoff stands
	case !needsHuman(err):
		if rf := r.held[key]; rf != nil {
			delete(r.held, key)
			log.Info("github refusal ended", "write", key, "refused_times", rf.times, "was", rf.err.Error())
		}
		return url, err
	}
	if r.held == nil {
		r.held = map[string]*refusal{}
	}
	rf := r.held[key]
	if rf == nil {
		rf = &refusal{}
		r.held[key] = rf
	}
	repeat := rf.err != nil && rf.err.Error() == err.Error()
	rf.err, rf.times = err, rf.times+1
	hold := refusalBackoffCap
	if rf.times <= 10 {
		hold = min(refusalBackoff<<(rf.times-1), refusalBackoffCap)
	}
	rf.until = now().Add(hold)
	return url, &heldRefusal{err: err, times: rf.times, until: rf.until, repeat: repeat}
}

// splitHeld splits err (errors.Join'ed, at any depth) into the parts worth an error in the
// log (fresh) and the refusals that only go on (held, see heldRefusal).
func splitHeld(err error) (fresh, held []error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			f, h := splitHeld(e)
			fresh, held = append(fresh, f...), append(held, h...)
		}
		return fresh, held
	}
	var h *heldRefusal
	if errors.As(err, &h) && h.repeat {
		return nil, []error{err}
	}
	return []error{err}, nil
}

// reset forgets every refusal: the next pass asks GitHub again.
func (r *refusals) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = nil
}
