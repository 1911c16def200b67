package model

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Preflight sends, concurrently, one request per role of exactly the shape the night sends
// for it (the same model, options, tools, JSON mode, output limit and its field,
// prompt_cache_key, headers, query and extra_body: reqs hold the role's fixed prompt and a
// short question), so that whatever a server refuses in every request of the night it
// refuses before any ticket is claimed. Transport faults and 429s are retried with the
// night's backoff (Retry-After honoured) until models.preflight_wait (default 5m) has
// passed; each request is bounded by its endpoint's timeout (or models.preflight_timeout
// where that is set and shorter). Preflight requests are not recorded: they belong to no
// ticket; their usage is logged.
//
// It returns nil when every role got a usable answer, else one error per failing role
// naming the role, its model and endpoint, the server's words, the HTTP status as sent and
// the setting to change; each matches ErrTransport (still unreachable or failing when the
// wait ran out), ErrRejected (refused key, unknown model, an unknown parameter; ErrQuota
// too when out of credit), ErrBadResponse (streamed, not JSON) or
// ErrContextOverflow (the role's prompt does not fit the model's context), and carries a
// *Fault.
func (c *Client) Preflight(ctx context.Context, reqs []Request) error {
	deadline := c.clock.Now().Add(c.cfg.PreflightWait)
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.preflightRole(ctx, req, deadline)
		}()
	}
	wg.Wait()
	return joinSame(reqs, errs)
}

// joinSame joins the roles' errors, saying once what several roles met the same way.
func joinSame(reqs []Request, errs []error) error {
	type group struct {
		roles []string
		err   error
	}
	var groups []*group
	bySig := map[string]*group{}
	for i, err := range errs {
		if err == nil {
			continue
		}
		sig := err.Error()
		var f *Fault
		if errors.As(err, &f) {
			sig = f.Signature()
		}
		g, ok := bySig[sig]
		if !ok {
			g = &group{err: err}
			bySig[sig] = g
			groups = append(groups, g)
		}
		g.roles = append(g.roles, string(reqs[i].Role))
	}
	var out []error
	for _, g := range groups {
		if len(g.roles) == 1 {
			out = append(out, g.err)
			continue
		}
		out = append(out, fmt.Errorf("roles %s failed their preflight the same way; %w", strings.Join(g.roles, ", "), g.err))
	}
	return errors.Join(out...)
}

// preflightRole is one role's preflight request, retried until deadline.
func (c *Client) preflightRole(ctx context.Context, req Request, deadline time.Time) error {
	rc, ok := c.cfg.Roles[req.Role]
	if !ok {
		return fmt.Errorf("preflight: role %q is not one of triage, maker, checker, judge", req.Role)
	}
	ep := c.endpoints[rc.Endpoint]
	what := fmt.Sprintf("preflight of models.roles.%s (model %s at models.endpoints.%s, %s)", req.Role, rc.Model, ep.name, ep.baseURL)
	oreq := c.chatRequest(req, rc, ep)
	if err := c.fitWindow(req.Role, rc, &oreq); err != nil {
		return fmt.Errorf("%s: the role's fixed prompt alone leaves no room: %w",
			what, &Fault{Role: req.Role, Endpoint: ep.name, Class: ErrorClassContextOverflow, err: err})
	}
	key := c.cacheKey(req)
	timeout := ep.timeout
	if c.cfg.PreflightTimeout > 0 {
		timeout = min(timeout, c.cfg.PreflightTimeout)
	}
	start := c.clock.Now()
	empty := 0 // answers without choices so far
	for n := 0; ; n++ {
		actx, cancel := context.WithTimeout(ctx, timeout)
		ws := &wireState{cacheKey: key}
		resp, err := ep.oc.CreateChatCompletion(withWire(actx, ws), oreq)
		cancel()
		var f fault
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w", what, context.Cause(ctx))
		case err == nil && len(resp.Choices) > 0 && ws.info.errObj == nil && ws.info.interrupted == "":
			u := usageOf(resp.Usage, ws.info)
			c.log.Info("preflight passed", "role", string(req.Role), "model", rc.Model, "endpoint", ep.name,
				"prompt_tokens", u.PromptTokens, "completion_tokens", u.CompletionTokens, "usage_reported", ws.info.usageReported,
				"finish_reason", string(resp.Choices[0].FinishReason), "duration_s", float64(c.clock.Now().Sub(start).Milliseconds())/1000, "retries", n)
			return nil
		case err == nil && ws.info.errObj != nil:
			f = classifyHTTP(ws.status, *ws.info.errObj)
			err = fmt.Errorf("HTTP %d with an error instead of a completion", ws.status)
		case err == nil && len(resp.Choices) > 0:
			f, err = interruptedAnswer(ws.status, ws.info), fmt.Errorf("the answer ended with finish_reason %q", ws.info.interrupted)
		case err == nil:
			empty++
			f, err = emptyAnswer(ws.status, empty), errors.New("no choices in the answer")
		default:
			f = classify(ctx, err, ws)
		}
		if timeout < ep.timeout {
			f.bound = fmt.Sprintf("%s (models.preflight_timeout, below models.endpoints.%s.timeout %s; raise it for a slow server)", timeout, ep.name, ep.timeout)
		}
		f.apiMsg = c.redact(ep, f.apiMsg)
		delay := backoff(n+1, c.cfg.Retry.BaseDelay, c.cfg.Retry.MaxDelay, c.jitter)
		if ra, ok := parseRetryAfter(ws.retryAfter, c.clock.Now()); ok {
			delay = ra
		}
		if f.retryable && c.clock.Now().Add(delay).Before(deadline) {
			c.log.Warn("preflight request failed, retrying", "role", string(req.Role), "endpoint", ep.name,
				"error_class", f.class, "status", f.status, "retry", n+1, "delay_s", float64(delay.Milliseconds())/1000, "server_said", f.apiMsg,
				"gives_up_at", deadline)
			select {
			case <-c.clock.After(delay):
				continue
			case <-ctx.Done():
				return fmt.Errorf("%s: %w", what, context.Cause(ctx))
			}
		}
		failed := c.failure(ctx, ep, req.Role, rc.Model, f, n+1, err)
		switch {
		case f.class == ErrorClassContextOverflow:
			return fmt.Errorf("%s: the role's fixed prompt with an output limit of %d tokens does not fit the model's context as the server runs it; serve the model with a larger context, or set models.roles.%s.context_window (and max_output_tokens) to what the server allows: %w",
				what, oreq.MaxCompletionTokens, req.Role, failed)
		case f.retryable:
			return fmt.Errorf("%s: still failing after %s of retries (models.preflight_wait %s): %w",
				what, c.clock.Now().Sub(start).Round(time.Second), c.cfg.PreflightWait, failed)
		}
		return fmt.Errorf("%s: %w", what, failed)
	}
}

// Unavailable probes every down endpoint whose probe is due (one caller at a time per
// endpoint) and returns the endpoints still down, sorted by name. Workers call it
// before claiming: a ticket needs every role's endpoint.
func (c *Client) Unavailable(ctx context.Context) []EndpointStatus {
	var out []EndpointStatus
	for _, name := range slices.Sorted(maps.Keys(c.endpoints)) {
		ep := c.endpoints[name]
		if ep.brk.takeProbe() {
			err := c.probeUp(ctx, ep)
			msg := ""
			if err != nil {
				msg = c.redact(ep, clean(err.Error()))
			}
			if ctx.Err() != nil {
				ep.brk.probed(errors.New("canceled"), ep.brk.status().LastError)
			} else if ep.brk.probed(err, msg) {
				c.log.Info("model endpoint up again: probe passed", "endpoint", ep.name, "base_url", ep.baseURL)
				c.notify(ep.brk.status())
			} else if err != nil {
				s := ep.brk.status()
				c.log.Warn("model endpoint still down", "endpoint", ep.name, "base_url", ep.baseURL,
					"since", s.Since, "last_error", s.LastError, "next_probe", s.NextProbe)
				c.notify(s)
			}
		}
		if s := ep.brk.status(); s.Down {
			out = append(out, s)
		}
	}
	return out
}

// Endpoints returns every endpoint's breaker status, sorted by name.
func (c *Client) Endpoints() []EndpointStatus {
	var out []EndpointStatus
	for _, name := range slices.Sorted(maps.Keys(c.endpoints)) {
		out = append(out, c.endpoints[name].brk.status())
	}
	return out
}

// probeUp is the circuit breaker's probe: a one-token chat request, since the model list
// may still answer while completions fail. Any answer that is not a transport fault (a
// refusal included) means the endpoint is up again.
func (c *Client) probeUp(ctx context.Context, ep *endpoint) error {
	err := c.probeChat(ctx, ep)
	if err == nil || !errors.Is(err, ErrTransport) {
		return nil
	}
	return err
}

// probeChat is the breaker's probe: a one-token request to the first role's model on the
// endpoint, bounded by the endpoint's own timeout (a slow server that answers within it is
// up, and must not be kept down by a shorter bound).
func (c *Client) probeChat(ctx context.Context, ep *endpoint) error {
	pctx, cancel := context.WithTimeout(ctx, ep.timeout)
	defer cancel()
	start := time.Now()
	model := ""
	for _, r := range Roles {
		if c.cfg.Roles[r].Endpoint == ep.name {
			model = c.cfg.Roles[r].Model
			break
		}
	}
	ws := &wireState{}
	resp, err := ep.oc.CreateChatCompletion(withWire(pctx, ws), openai.ChatCompletionRequest{
		Model: model, MaxCompletionTokens: 1,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "ping"}},
	})
	if err == nil && ws.info.errObj == nil && len(resp.Choices) > 0 {
		return nil
	}
	var f fault
	switch {
	case err == nil && ws.info.errObj != nil:
		f = classifyHTTP(ws.status, *ws.info.errObj)
	case err == nil:
		f = emptyAnswer(ws.status, 1) // the model is not answering yet: still down
	default:
		f = classify(pctx, err, ws)
		if ctx.Err() == nil && pctx.Err() != nil {
			f = fault{class: ErrorClassTimeout}
		}
	}
	switch f.class {
	case ErrorClassContextOverflow, ErrorClassRejected, ErrorClassQuota, ErrorClassCanceled, ErrorClassContentFilter:
		return nil // the server answered and understood the request
	}
	said := c.redact(ep, f.apiMsg)
	if said == "" && err != nil {
		said = c.redact(ep, clean(err.Error()))
	}
	return fmt.Errorf("probe of models.endpoints.%s (%s, 1 token of %s) failed after %s, %s: %s: %w",
		ep.name, ep.baseURL, model, time.Since(start).Round(time.Millisecond), probeFailure(f, ep), said, ErrTransport)
}

// probeFailure names a failed probe's class, with the status the server sent or, for a
// time-out without one, the bound it ran into: "server (HTTP 503)", "timeout (no answer
// within 5m0s, models.endpoints.local.timeout)", or the bare class.
func probeFailure(f fault, ep *endpoint) string {
	switch st := f.statusText(); {
	case f.class == ErrorClassTimeout && f.status == 0:
		return fmt.Sprintf("%s (no answer within %s, models.endpoints.%s.timeout)", f.class, ep.timeout, ep.name)
	case st != "":
		return fmt.Sprintf("%s (%s)", f.class, st)
	}
	return f.class
}
