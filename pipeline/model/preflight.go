package model

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Preflight checks every endpoint a role uses with one cheap request each, concurrently:
// GET /models, or, where listing is not offered (404, 405, 501, or a 200 carrying an
// error), a one-token chat request with the first role's model (not recorded: it is not
// any ticket's, and costs a few tokens). Each request is bounded by
// models.preflight_timeout (default 10s). It returns nil when every endpoint answered,
// else one error per failing endpoint naming it, its URL and the server's own words;
// the error matches ErrTransport (unreachable, 5xx) or ErrRejected (refused key, unknown
// model). A listed model set that lacks a configured model is only warned about: some
// servers list aliases under other names.
func (c *Client) Preflight(ctx context.Context) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.endpoints)) {
		ep := c.endpoints[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.probe(ctx, ep, true); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(errs, func(a, b error) int {
		switch {
		case a.Error() < b.Error():
			return -1
		case a.Error() > b.Error():
			return 1
		}
		return 0
	})
	return errors.Join(errs...)
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

// probe sends the preflight request to one endpoint.
func (c *Client) probe(ctx context.Context, ep *endpoint, warnModels bool) error {
	pctx, cancel := context.WithTimeout(ctx, c.cfg.PreflightTimeout)
	defer cancel()
	start := time.Now()
	ws := &wireState{}
	list, err := ep.oc.ListModels(withWire(pctx, ws))
	if err == nil {
		if warnModels {
			c.checkListed(ep, list)
		}
		return nil
	}
	f := classify(pctx, err, ws)
	if ctx.Err() == nil && pctx.Err() != nil {
		f = fault{class: ErrorClassTimeout}
	}
	if f.status == http.StatusNotFound || f.status == http.StatusMethodNotAllowed || f.status == http.StatusNotImplemented ||
		(f.class == ErrorClassBadResponse && ws.status/100 == 2) {
		return c.probeChat(ctx, ep)
	}
	return c.preflightError(ep, "GET /models", f, err, time.Since(start))
}

// probeChat is the preflight for a server that does not list models.
func (c *Client) probeChat(ctx context.Context, ep *endpoint) error {
	pctx, cancel := context.WithTimeout(ctx, c.cfg.PreflightTimeout)
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
	if err == nil && ws.info.errObj == nil {
		_ = resp
		return nil
	}
	var f fault
	if err == nil {
		f = classifyHTTP(ws.status, *ws.info.errObj)
	} else {
		f = classify(pctx, err, ws)
		if ctx.Err() == nil && pctx.Err() != nil {
			f = fault{class: ErrorClassTimeout}
		}
	}
	if f.class == ErrorClassContextOverflow {
		return nil // the server answered and understood the request
	}
	return c.preflightError(ep, fmt.Sprintf("POST /chat/completions (1 token of %s)", model), f, err, time.Since(start))
}

func (c *Client) preflightError(ep *endpoint, what string, f fault, err error, took time.Duration) error {
	said := c.redact(ep, f.apiMsg)
	if said == "" && err != nil {
		said = c.redact(ep, clean(err.Error()))
	}
	where := fmt.Sprintf("models.endpoints.%s (%s)", ep.name, ep.baseURL)
	switch f.class {
	case ErrorClassCanceled:
		return fmt.Errorf("preflight %s: %w", where, context.Canceled)
	case ErrorClassRejected, ErrorClassQuota, ErrorClassContextOverflow:
		hint := ""
		switch f.status {
		case http.StatusUnauthorized, http.StatusForbidden:
			hint = "; check the key"
			if ep.keyEnv != "" {
				hint = "; check " + ep.keyEnv
			}
		case http.StatusNotFound:
			hint = "; check base_url (it usually ends in /v1) and the model name"
		}
		if f.class == ErrorClassQuota {
			return fmt.Errorf("preflight %s: %s refused (HTTP %d): %s%s: %w: %w", where, what, f.status, said, hint, ErrQuota, ErrRejected)
		}
		return fmt.Errorf("preflight %s: %s refused (HTTP %d): %s%s: %w", where, what, f.status, said, hint, ErrRejected)
	}
	status := ""
	if f.status != 0 {
		status = fmt.Sprintf(" (HTTP %d)", f.status)
	}
	return fmt.Errorf("preflight %s: %s failed after %s, %s%s: %s: %w", where, what, took.Round(time.Millisecond), f.class, status, said, ErrTransport)
}

// checkListed warns about configured models the endpoint does not list.
func (c *Client) checkListed(ep *endpoint, list openai.ModelsList) {
	if len(list.Models) == 0 {
		return
	}
	listed := map[string]bool{}
	for _, m := range list.Models {
		listed[m.ID] = true
	}
	for _, r := range Roles {
		rc := c.cfg.Roles[r]
		if rc.Endpoint == ep.name && !listed[rc.Model] {
			c.log.Warn("preflight: the endpoint does not list the model a role uses; requests may fail with 404",
				"endpoint", ep.name, "role", string(r), "model", rc.Model, "listed", len(list.Models))
		}
	}
}
