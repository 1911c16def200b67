package model

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/timing"
	"github.com/ticketd/ticketd/store/clock"
)

// continuePrompt is the user turn appended after an answer cut at finish_reason=length.
const continuePrompt = "Your previous answer was cut off by the output limit. Continue exactly where it stopped, without repeating anything."

// Clock is the time source (clock.Clock); tests inject a clocktest.Fake so that backoff
// and warm-up waits return at once.
type Clock = clock.Clock

// Option adjusts a Client built by New.
type Option func(*options)

type options struct {
	httpClient *http.Client
	clock      Clock
	jitter     func() float64
	observer   func(EndpointStatus)
}

// WithEndpointObserver sets a function called whenever an endpoint is marked down, comes
// back, or fails a probe, so the daemon can log it and keep it for ticketctl stats. It is
// called on the goroutine that saw the change and must not block.
func WithEndpointObserver(f func(EndpointStatus)) Option {
	return func(o *options) { o.observer = f }
}

// WithHTTPClient sets the HTTP client whose transport carries the requests (wrapped by
// the wire shaping); default a fresh http.Client over http.DefaultTransport.
func WithHTTPClient(hc *http.Client) Option { return func(o *options) { o.httpClient = hc } }

// WithClock sets the clock used for timestamps, latency, backoff sleeps and the warm-up
// bound.
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// WithRand sets the jitter source, a function returning values in [0, 1).
func WithRand(f func() float64) Option { return func(o *options) { o.jitter = f } }

// Client sends chat requests for the four roles. It is safe for concurrent use; one
// Client should serve the whole daemon so that the warm-up gate sees every worker.
type Client struct {
	cfg       Config
	rec       Recorder
	log       *slog.Logger
	clock     Clock
	jitter    func() float64
	endpoints map[string]*endpoint
	warm      *warmup
	warned    sync.Map // model name -> struct{}: unknown-price warnings given
	observer  func(EndpointStatus)
}

type endpoint struct {
	name     string
	keyEnv   string
	key      string   // never logged; removed from any server message kept
	secrets  []string // header_env values, removed likewise
	baseURL  string
	timeout  time.Duration
	parallel *bool
	oc       *openai.Client
	hc       *http.Client
	brk      *breaker
}

// New checks cfg and prepares one go-openai client per endpoint a role uses, reading
// each API key from the environment variable the endpoint names. rec may be nil only
// where nothing is to be recorded (a tool that prints answers).
func New(cfg Config, rec Recorder, logger *slog.Logger, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	cfg = cfg.withDefaults()
	o := options{clock: clock.Real{}, jitter: rand.Float64}
	for _, opt := range opts {
		opt(&o)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	base := o.httpClient
	if base == nil {
		base = &http.Client{}
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}

	c := &Client{
		cfg:       cfg,
		rec:       rec,
		log:       logger.With("component", "model"),
		clock:     o.clock,
		jitter:    o.jitter,
		endpoints: make(map[string]*endpoint),
		warm:      newWarmup(o.clock, cfg.WarmupWait),
		observer:  o.observer,
	}
	for _, r := range Roles {
		name := cfg.Roles[r].Endpoint
		if _, ok := c.endpoints[name]; ok {
			continue
		}
		ep, err := newEndpoint(name, cfg.Endpoints[name], base, rt, cfg.Breaker, o.clock)
		if err != nil {
			return nil, err
		}
		c.endpoints[name] = ep
	}
	return c, nil
}

// newEndpoint prepares the client of one endpoint, reading its key and secret headers from
// the environment now, so that a missing variable fails the start, not the night.
func newEndpoint(name string, ep Endpoint, base *http.Client, rt http.RoundTripper, bc BreakerConfig, clock Clock) (*endpoint, error) {
	key := ""
	if ep.APIKeyEnv != "" {
		key = os.Getenv(ep.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("models.endpoints.%s.api_key_env: environment variable %s is empty or unset; export it, or remove api_key_env for a server that needs no key", name, ep.APIKeyEnv)
		}
	}
	wt, secrets, err := newWireTransport(name, ep, rt)
	if err != nil {
		return nil, err
	}
	hc := *base
	hc.Transport = wt
	oc := openai.DefaultConfig(key)
	if ep.BaseURL != "" {
		oc.BaseURL = strings.TrimRight(ep.BaseURL, "/")
	}
	oc.HTTPClient = &hc
	return &endpoint{
		name:     name,
		keyEnv:   ep.APIKeyEnv,
		key:      key,
		secrets:  secrets,
		baseURL:  oc.BaseURL,
		timeout:  cmpDuration(ep.Timeout, DefaultTimeout),
		parallel: ep.ParallelToolCalls,
		oc:       openai.NewClientWithConfig(oc),
		hc:       &hc,
		brk:      newBreaker(name, oc.BaseURL, bc, clock),
	}, nil
}

// newWireTransport is the endpoint's request shaping over rt. secrets are the header
// values read from header_env, which redact removes from anything the server echoes.
func newWireTransport(name string, ep Endpoint, rt http.RoundTripper) (wt *wireTransport, secrets []string, err error) {
	extras := &extraStore{}
	wt = &wireTransport{base: rt, headers: map[string]string{}, query: ep.Query, maxAnswer: cmp.Or(ep.MaxAnswerBytes, DefaultMaxAnswerBytes),
		delCache: ep.PromptCacheKey != nil && !*ep.PromptCacheKey, extras: extras,
		body: bodyOptions{maxTokensField: ep.MaxTokensField, extra: map[string]json.RawMessage{}, extraFor: extras.get}}
	for h, v := range ep.Headers {
		wt.headers[h] = v
	}
	for h, env := range ep.HeaderEnv {
		v := os.Getenv(env)
		if v == "" {
			return nil, nil, fmt.Errorf("models.endpoints.%s.header_env.%s: environment variable %s is empty or unset; export it", name, h, env)
		}
		wt.headers[h] = v
		secrets = append(secrets, v)
	}
	for k, v := range ep.ExtraBody {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, nil, fmt.Errorf("models.endpoints.%s.extra_body.%s: %w", name, k, err)
		}
		wt.body.extra[k] = b
	}
	return wt, secrets, nil
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Chat sends one logical call: it waits at the role's warm-up gate, retries transport
// faults, continues an answer cut at finish_reason=length (at most MaxContinuations
// times, merging the content), and records the call with its cost.
//
// Errors: ErrTransport (wrapped) when the retries ran out on transport faults: release
// the ticket, the attempt is not at fault; ErrRejected when the endpoint refused the
// request; the context's error when ctx ended. An answer still cut after the last
// continuation is returned without error, with FinishReason "length".
func (c *Client) Chat(ctx context.Context, req Request) (Response, error) {
	rc, ok := c.roleConfig(req.Role)
	if !ok {
		return Response{}, fmt.Errorf("model chat: role %q is not one of triage, maker, checker, judge, arbiter", req.Role)
	}
	ep := c.endpoints[rc.Endpoint]

	// The attempt's model wait: the exchange, and the wait for another worker's first
	// request of the role (warm.enter), which is waiting on the model too.
	waitStart := time.Now()
	open, done, err := c.warm.enter(ctx, req.Role)
	if err != nil {
		return Response{}, fmt.Errorf("models.roles.%s: wait for the first %s request: %w", req.Role, req.Role, err)
	}
	defer done()
	if open != nil {
		defer open()
	}

	start := c.clock.Now()
	call := Call{
		TicketID:  req.TicketID,
		Attempt:   req.Attempt,
		Role:      req.Role,
		Model:     rc.Model,
		Endpoint:  rc.Endpoint,
		StartedAt: start,

		Compactions: req.Compactions,
	}
	out, providerCost, callErr := c.exchange(ctx, req, rc, ep, open, &call)
	timing.Since(ctx, timing.ModelWait, waitStart)
	call.FinishReason = out.FinishReason
	call.Latency = c.clock.Now().Sub(start)
	c.settleCost(&call, providerCost)
	out.Usage, out.CostUSD, out.UsageEstimated = call.Usage, call.CostUSD, call.UsageEstimated

	if c.rec != nil {
		if err := c.rec.RecordModelCall(context.WithoutCancel(ctx), call); err != nil {
			// The tokens are spent either way; failing the ticket would not unspend
			// them, so the lost record is reported loudly and the answer is kept.
			c.log.Error("record model call", "role", string(req.Role), "ticket_id", req.TicketID, "err", err)
		}
	}
	if callErr != nil {
		return out, callErr
	}
	return out, nil
}

// exchange sends the request and its continuations, adding every HTTP attempt's usage,
// retries and failure to call, which Chat records even when the exchange fails: tokens
// spent before a failure are still billed. providerCost is the sum of the provider's own
// cost figures, nil unless every answer carried one.
func (c *Client) exchange(ctx context.Context, req Request, rc RoleConfig, ep *endpoint, open func(), call *Call) (out Response, providerCost *float64, err error) {
	oreq := c.chatRequest(req, rc, ep)
	key := c.cacheKey(req)
	if err := c.fitWindow(req.Role, rc, &oreq); err != nil {
		call.ErrorClass, call.Error = ErrorClassContextOverflow, err.Error()
		return out, nil, &Fault{Role: req.Role, Endpoint: rc.Endpoint, Class: ErrorClassContextOverflow, err: err}
	}
	var total float64
	allProviderCost := true
	for {
		resp, u, st, err := c.send(ctx, ep, req.Role, oreq, key, open)
		call.addAttempts(u, st)
		if err != nil {
			call.ErrorClass = st.class
			call.Error = err.Error()
			return out, nil, err
		}
		if st.providerCost != nil {
			total += *st.providerCost
		} else {
			allProviderCost = false
		}
		choice := resp.Choices[0]
		mergeAnswer(&out, choice, call.Continuations == 0)
		if !c.continues(choice, call.Continuations) {
			break
		}
		oreq.Messages = append(oreq.Messages,
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: choice.Message.Content},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: continuePrompt})
		call.Continuations++
	}
	if !allProviderCost {
		return out, nil, nil
	}
	return out, &total, nil
}

// addAttempts adds what the HTTP attempts behind one request cost and met to the call.
func (call *Call) addAttempts(u Usage, st sendStats) {
	call.Retries += st.retries
	call.Timeouts += st.timeouts
	call.Usage = call.Usage.Add(u)
	if st.estimated {
		call.UsageEstimated = true
	}
	if st.completionUnknown {
		call.CompletionUnknown = true
	}
}

// mergeAnswer adds one answer to out: the first is taken whole, a continuation's text and
// tool calls are appended. Content sent as parts is joined, since the pipeline reads
// Content only.
func mergeAnswer(out *Response, choice openai.ChatCompletionChoice, first bool) {
	if choice.Message.Content == "" && len(choice.Message.MultiContent) > 0 {
		for _, p := range choice.Message.MultiContent {
			choice.Message.Content += p.Text
		}
	}
	choice.Message.MultiContent = nil
	if first {
		out.Message = choice.Message
	} else {
		out.Message.Content += choice.Message.Content
		out.Message.ToolCalls = append(out.Message.ToolCalls, choice.Message.ToolCalls...)
	}
	out.FinishReason = string(choice.FinishReason)
}

// continues reports whether an answer cut at finish_reason=length is continued. Only
// plain text is: cut tool-call arguments cannot be resumed, and an empty cut answer
// (reasoning used the whole budget) would only repeat.
func (c *Client) continues(choice openai.ChatCompletionChoice, done int) bool {
	return choice.FinishReason == openai.FinishReasonLength && done < c.cfg.MaxContinuations &&
		len(choice.Message.ToolCalls) == 0 && choice.Message.Content != ""
}

// settleCost sets the call's cost and where it came from: the provider's own figure when
// every answer carried one, else the price table (an estimate when the usage was), else
// unknown, never zero.
func (c *Client) settleCost(call *Call, providerCost *float64) {
	call.PriceCostUSD = c.cost(call.Model, call.Usage)
	switch {
	case providerCost != nil:
		call.ProviderCostUSD, call.CostUSD, call.CostSource = providerCost, providerCost, CostSourceProvider
	case call.PriceCostUSD == nil:
		call.CostSource = CostSourceUnknown
	case call.UsageEstimated:
		call.CostUSD, call.CostSource = call.PriceCostUSD, CostSourceEstimate
	default:
		call.CostUSD, call.CostSource = call.PriceCostUSD, CostSourcePriceTable
	}
}

// roleConfig is the configuration a role's requests use: its own, or for the arbiter the
// judge's.
func (c *Client) roleConfig(r Role) (RoleConfig, bool) {
	if r == RoleArbiter {
		r = RoleJudge
	}
	rc, ok := c.cfg.Roles[r]
	return rc, ok
}

// chatRequest is the request Chat sends for req, before fitWindow: the preflight sends the
// same, so that whatever a server refuses in a night's requests it refuses at the start.
func (c *Client) chatRequest(req Request, rc RoleConfig, ep *endpoint) openai.ChatCompletionRequest {
	oreq := openai.ChatCompletionRequest{
		Model:               rc.Model,
		Messages:            slices.Clone(req.Messages),
		Tools:               req.Tools,
		MaxCompletionTokens: c.cfg.maxOutput(req.Role, rc.Model),
		ReasoningEffort:     rc.ReasoningEffort,
	}
	if ep.parallel != nil && len(req.Tools) > 0 {
		oreq.ParallelToolCalls = *ep.parallel
	}
	if req.JSON {
		oreq.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	return oreq
}

// fitWindow caps the output limit to what the role's context window leaves after the
// estimated prompt (vLLM rejects prompt + max_tokens over max_model_len), and reports
// ErrContextOverflow when less than MinOutputRoom would be left.
func (c *Client) fitWindow(role Role, rc RoleConfig, oreq *openai.ChatCompletionRequest) error {
	if rc.ContextWindow <= 0 {
		return nil
	}
	b, err := json.Marshal(struct {
		M []openai.ChatCompletionMessage `json:"messages"`
		T []openai.Tool                  `json:"tools"`
	}{oreq.Messages, oreq.Tools})
	if err != nil {
		return nil // go-openai will report it when sending
	}
	prompt := int(EstimateTokens(len(b)))
	room := rc.ContextWindow - prompt
	if room < MinOutputRoom {
		return fmt.Errorf("models.roles.%s: %w: about %d prompt tokens leave %d of the %d-token context_window for the answer (at least %d needed)",
			role, ErrContextOverflow, prompt, max(room, 0), rc.ContextWindow, MinOutputRoom)
	}
	oreq.MaxCompletionTokens = min(oreq.MaxCompletionTokens, room)
	return nil
}

// ContextWindow is the role's configured context window in tokens, 0 when unknown; the
// maker's compaction reads it.
func (c *Client) ContextWindow(role Role) int {
	rc, _ := c.roleConfig(role)
	return rc.ContextWindow
}

// sendStats describes the HTTP attempts behind one chat request.
type sendStats struct {
	retries, timeouts int
	class             string // error class of the final failure
	estimated         bool   // some usage was estimated (no usage block, or a truncated body)
	// completionUnknown: some attempt was abandoned before its answer arrived whole (a
	// time-out, a cut body) that the server may have finished and billed.
	completionUnknown bool
	providerCost      *float64
}

// send performs one chat request with retries of transport faults. Transport faults
// feed the endpoint's breaker; once it opens, the retries stop and the request fails
// with ErrEndpointDown.
func (c *Client) send(ctx context.Context, ep *endpoint, role Role, oreq openai.ChatCompletionRequest, key string, open func()) (openai.ChatCompletionResponse, Usage, sendStats, error) {
	var st sendStats
	var spent Usage // estimated usage of abandoned or truncated answers, which may be billed
	empty := 0      // answers without choices so far
	for n := 0; ; n++ {
		if ep.brk.down() {
			s := ep.brk.status()
			st.class = ErrorClassEndpointDown
			err := fmt.Errorf("models.roles.%s: endpoint %s (%s) down since %s after %d transport failures, last: %s: %w: %w",
				role, ep.name, ep.baseURL, s.Since.UTC().Format(time.RFC3339), s.Failures, s.LastError, ErrEndpointDown, ErrTransport)
			return openai.ChatCompletionResponse{}, spent, st, &Fault{Role: role, Endpoint: ep.name, Class: ErrorClassEndpointDown, Said: s.LastError, err: err}
		}
		actx, cancel := context.WithTimeout(ctx, ep.timeout)
		ws := &wireState{cacheKey: key, onResponse: open}
		resp, err := ep.oc.CreateChatCompletion(withWire(actx, ws), oreq)
		cancel()
		if err == nil && len(resp.Choices) > 0 && ws.info.errObj == nil && ws.info.interrupted == "" {
			c.breakerSuccess(ep)
			u := usageOf(resp.Usage, ws.info)
			if !ws.info.usageReported {
				u = estimateUsage(ws.reqBytes, resp.Choices[0].Message)
				st.estimated = true
			}
			st.providerCost = ws.info.providerCost
			return resp, spent.Add(u), st, nil
		}
		var f fault
		switch {
		case err == nil && ws.info.errObj != nil:
			f = classifyHTTP(ws.status, *ws.info.errObj)
			err = fmt.Errorf("HTTP %d with an error instead of a completion", ws.status)
		case err == nil && len(resp.Choices) > 0:
			// An answer the server broke off was made and may be billed: keep its usage.
			u := usageOf(resp.Usage, ws.info)
			if !ws.info.usageReported {
				u, st.estimated = estimateUsage(ws.reqBytes, resp.Choices[0].Message), true
			}
			spent = spent.Add(u)
			f, err = interruptedAnswer(ws.status, ws.info), fmt.Errorf("the answer ended with finish_reason %q", ws.info.interrupted)
		case err == nil:
			// An answer without choices may still have been billed: keep its usage.
			if ws.info.usageReported {
				spent = spent.Add(usageOf(resp.Usage, ws.info))
			}
			empty++
			f, err = emptyAnswer(ws.status, empty), errors.New("no choices in the answer")
		default:
			f = classify(ctx, err, ws)
			if f.class == ErrorClassBadResponse && ws.jsonBytes > 0 {
				// A JSON answer go-openai could not decode: recorded as zero, the call
				// would hide what the server may bill for it.
				u, estimated := unreadUsage(ws)
				spent = spent.Add(u)
				st.estimated = st.estimated || estimated
			}
		}
		if ws.oversize > 0 {
			// The server made and may bill the answer it sent, cut or not.
			spent = spent.Add(Usage{PromptTokens: EstimateTokens(ws.reqBytes), CompletionTokens: EstimateTokens(int(min(ws.oversize, 1<<40)))})
			st.estimated = true
		}
		f.apiMsg = c.redact(ep, f.apiMsg)
		st.class = f.class
		if f.class == ErrorClassTruncated || (f.class == ErrorClassTimeout && f.status == 0) {
			// The server may finish and bill an answer the client stopped waiting for.
			spent = spent.Add(Usage{PromptTokens: EstimateTokens(ws.reqBytes)})
			st.estimated, st.completionUnknown = true, true
		}
		if transportClass(f.class) {
			c.breakerFailure(ep, f, err)
		} else if f.class != ErrorClassCanceled && f.class != ErrorClassClient && f.class != ErrorClassRateLimit {
			c.breakerSuccess(ep) // the server answered: it is up, whatever it thought of the request
		}
		reset, resetKnown := time.Duration(0), false
		if f.class == ErrorClassRateLimit {
			reset, resetKnown = rateReset(ws.rateHeader, cmp.Or(f.text, f.apiMsg), c.clock.Now())
		}
		if resetKnown && (reset > c.cfg.Retry.MaxWait || n >= c.cfg.Retry.MaxRetries) {
			// Waiting it out here would hold a worker (and its lease) idle: the ticket
			// waits in the queue until the limit lifts instead.
			return resp, spent, st, c.rateLimited(ep, role, f, n+1, c.clock.Now().Add(reset))
		}
		if !f.retryable || n >= c.cfg.Retry.MaxRetries || ep.brk.down() {
			return resp, spent, st, c.failure(ctx, ep, role, oreq.Model, f, n+1, err)
		}
		st.retries++
		if f.class == ErrorClassTimeout {
			st.timeouts++
		}
		delay := backoff(n+1, c.cfg.Retry.BaseDelay, c.cfg.Retry.MaxDelay, c.jitter)
		if ra, ok := parseRetryAfter(ws.retryAfter, c.clock.Now()); ok {
			if !resetKnown && ra > c.cfg.Retry.MaxWait {
				// A 503 for maintenance (OpenRouter and Azure send Retry-After with 503s): the
				// wait would hold a worker and its lease idle, up to 10 minutes a retry. The
				// ticket goes back to the queue, unspent, instead.
				err = fmt.Errorf("%w; the server asked to retry after %s, longer than models.retry.max_wait (%s): not waited", err, ra, c.cfg.Retry.MaxWait)
				return resp, spent, st, c.failure(ctx, ep, role, oreq.Model, f, n+1, err)
			}
			delay = ra
		}
		if resetKnown {
			delay = reset
		}
		c.log.Warn("model request failed, retrying", "role", string(role), "endpoint", ep.name,
			"error_class", f.class, "status", f.status, "retry", n+1, "delay_s", float64(delay.Milliseconds())/1000, "server_said", f.apiMsg)
		select {
		case <-c.clock.After(delay):
		case <-ctx.Done():
			st.class = ErrorClassCanceled
			return resp, spent, st, fmt.Errorf("models.roles.%s: wait to retry: %w", role, ctx.Err())
		}
	}
}

// rateLimited is the error for a rate limit the provider said lifts at resetAt: a *Fault
// with ResetAt, matching ErrRateLimited and ErrTransport.
func (c *Client) rateLimited(ep *endpoint, role Role, f fault, attempts int, resetAt time.Time) error {
	said := ""
	if f.apiMsg != "" {
		said = " (server said: " + f.apiMsg + ")"
	}
	err := fmt.Errorf("models.roles.%s: endpoint %s (%s) rate limited after %d attempts (%s)%s; it lifts at %s: %w: %w",
		role, ep.name, ep.baseURL, attempts, f.statusText(), said, resetAt.UTC().Format(time.RFC3339), ErrRateLimited, ErrTransport)
	return &Fault{Role: role, Endpoint: ep.name, Class: f.class, Status: f.wireStatus(), Said: f.apiMsg, ResetAt: resetAt, err: err}
}

// cleanError shows an underlying error's text cleaned like a server message (go-openai
// puts the whole server message in its error text) while keeping it for errors.As.
type cleanError struct {
	msg string
	err error
}

func (e *cleanError) Error() string { return e.msg }
func (e *cleanError) Unwrap() error { return e.err }

// redact removes the endpoint's own key from a server message (some echo it back).
func (c *Client) redact(ep *endpoint, msg string) string {
	for _, k := range append([]string{ep.key}, ep.secrets...) {
		if len(k) >= 6 {
			msg = strings.ReplaceAll(msg, k, "[redacted]")
		}
	}
	return msg
}

func (c *Client) breakerFailure(ep *endpoint, f fault, err error) {
	msg := f.class
	if f.status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", f.status)
	}
	if f.apiMsg != "" {
		msg += ": " + f.apiMsg
	} else if err != nil {
		msg += ": " + c.redact(ep, clean(err.Error()))
	}
	if ep.brk.failure(msg) {
		s := ep.brk.status()
		c.log.Error("model endpoint down: requests to it stop until a probe passes", "endpoint", ep.name, "base_url", ep.baseURL,
			"since", s.Since, "failures", s.Failures, "last_error", s.LastError, "next_probe", s.NextProbe)
		c.notify(s)
	}
}

func (c *Client) breakerSuccess(ep *endpoint) {
	if ep.brk.success() {
		s := ep.brk.status()
		c.log.Info("model endpoint up again", "endpoint", ep.name, "base_url", ep.baseURL)
		c.notify(s)
	}
}

func (c *Client) notify(s EndpointStatus) {
	if c.observer != nil {
		c.observer(s)
	}
}

// failure builds the error for a request that will not be retried, a *Fault unless the
// caller's context ended. Every error keeps the server's own words (cleaned: whitespace
// collapsed, keys removed, truncated) and the HTTP status as sent.
func (c *Client) failure(ctx context.Context, ep *endpoint, role Role, model string, f fault, attempts int, err error) error {
	if f.class == ErrorClassCanceled {
		return fmt.Errorf("models.roles.%s: %w", role, ctx.Err())
	}
	return &Fault{Role: role, Endpoint: ep.name, Class: f.class, Status: f.wireStatus(), Said: f.apiMsg, AnyRequest: f.anyRequest,
		err: c.failureError(ep, role, model, f, attempts, err)}
}

func (c *Client) failureError(ep *endpoint, role Role, model string, f fault, attempts int, err error) error {
	if err != nil {
		err = &cleanError{msg: c.redact(ep, clean(err.Error())), err: err}
	}
	said := ""
	if f.apiMsg != "" {
		said = " (server said: " + f.apiMsg + ")"
	}
	status := f.statusText()
	switch f.class {
	case ErrorClassContextOverflow:
		return fmt.Errorf("models.roles.%s: %w (%s from %s)%s%s", role, ErrContextOverflow, status, ep.name, said, overflowHint(role, f))
	case ErrorClassQuota:
		return fmt.Errorf("models.roles.%s: %w (%s from %s at %s): add credit or raise the account's limit%s: %w",
			role, ErrQuota, status, ep.name, ep.baseURL, said, ErrRejected)
	case ErrorClassRejected:
		return fmt.Errorf("models.roles.%s: %w (%s)%s%s", role, ErrRejected, status, said, rejectedHint(ep, role, model, f))
	case ErrorClassBadResponse:
		hint := fmt.Sprintf(": check models.endpoints.%s.base_url (%s): it must be an OpenAI-compatible chat completions server", ep.name, ep.baseURL)
		switch {
		case strings.Contains(f.apiMsg, "streamed"):
			hint = fmt.Sprintf(": point models.endpoints.%s.base_url (%s) at a server or proxy that answers stream: false with one JSON object", ep.name, ep.baseURL)
		case strings.Contains(f.apiMsg, "max_answer_bytes"):
			hint = fmt.Sprintf(": the server ignored the output limit (models.roles.%s.max_output_tokens) or sent more than an answer; raise models.endpoints.%s.max_answer_bytes only if the model's answers are really this long", role, ep.name)
		}
		return fmt.Errorf("models.roles.%s: %w from %s (%s)%s%s: %w", role, ErrBadResponse, ep.name, status, said, hint, err)
	case ErrorClassClient:
		return fmt.Errorf("models.roles.%s: request refused before sending: %w", role, err)
	case ErrorClassContentFilter:
		return fmt.Errorf("models.roles.%s: %w (%s from %s)%s: the ticket's text or the code the conversation quotes set it off",
			role, ErrContentFiltered, status, ep.name, said)
	}
	last := f.class
	if f.class == ErrorClassTimeout && f.status == 0 && f.bound != "" {
		last = "timeout: no answer within " + f.bound
	} else if f.class == ErrorClassTimeout && f.status == 0 {
		last = fmt.Sprintf("timeout: no answer within %s (models.endpoints.%s.timeout; raise it for a slow server)", ep.timeout, ep.name)
	} else if status != "" {
		last += " (" + status + ")"
	}
	if f.class == ErrorClassEmptyAnswer {
		said += fmt.Sprintf(": the endpoint made no answer, as OpenRouter does while a model warms up or a provider scales; if it goes on, use another model or provider for models.roles.%s", role)
	}
	if ep.brk.down() {
		return fmt.Errorf("models.roles.%s: endpoint %s (%s) marked down after this request's %d attempts, last %s%s: %w: %w: %w",
			role, ep.name, ep.baseURL, attempts, last, said, ErrEndpointDown, ErrTransport, err)
	}
	return fmt.Errorf("models.roles.%s: endpoint %s (%s) failed %d attempts, last %s%s: %w: %w",
		role, ep.name, ep.baseURL, attempts, last, said, ErrTransport, err)
}

// usageOf normalises go-openai's usage, whose detail blocks are pointers that local
// servers omit, plus the fields other providers add.
func usageOf(u openai.Usage, x answerInfo) Usage {
	out := Usage{
		PromptTokens:     int64(u.PromptTokens),
		CompletionTokens: int64(u.CompletionTokens),
		CacheWriteTokens: x.cacheWrite,
	}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedTokens = int64(d.CachedTokens)
	} else if x.hasHit {
		out.CachedTokens = x.cacheHit
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = int64(d.ReasoningTokens)
	}
	// A count below zero (a broken proxy's arithmetic) would lower the night's spend.
	for _, n := range []*int64{&out.PromptTokens, &out.CompletionTokens, &out.CachedTokens, &out.ReasoningTokens} {
		*n = max(*n, 0)
	}
	// xAI counts reasoning beside completion_tokens, not in it (its total_tokens is prompt
	// + completion + reasoning); the convention here is OpenAI's, reasoning inside, so
	// that the reasoning is billed as the output it is.
	if r := out.ReasoningTokens; r > 0 && (r > out.CompletionTokens ||
		int64(u.TotalTokens) == int64(u.PromptTokens)+out.CompletionTokens+r) {
		out.CompletionTokens += r
	}
	// Anthropic counts input_tokens without the tokens read from or written to the cache;
	// a gateway that passes its figures on as prompt_tokens reports less prompt than cache.
	// The convention here is that both are parts of the prompt.
	if out.CachedTokens+out.CacheWriteTokens > out.PromptTokens {
		out.PromptTokens += out.CachedTokens + out.CacheWriteTokens
	}
	return out
}

// cost prices a usage, or returns nil (and warns once per model) when the model has no
// price: an unknown cost must never be recorded as zero.
func (c *Client) cost(model string, u Usage) *float64 {
	p, ok := c.cfg.PriceFor(model)
	if !ok {
		if _, warned := c.warned.LoadOrStore(model, struct{}{}); !warned {
			c.log.Warn("model has no price; its cost is recorded as unknown", "model", model,
				"hint", "add it under models.prices (USD per million tokens)")
		}
		return nil
	}
	v := Cost(p, u)
	return &v
}

// cacheKey is the prompt_cache_key for a request, or "" when disabled.
func (c *Client) cacheKey(req Request) string {
	prefix := c.cfg.CacheKey
	switch prefix {
	case CacheKeyOff:
		return ""
	case CacheKeyAuto:
		prefix = "ticketd"
	}
	version := req.PrefixVersion
	if version == "" {
		version = toolsVersion(req.Tools)
	}
	return prefix + "-" + string(req.Role) + "-" + version
}

// toolsVersion is a short hash of the tool definitions, the static head of the prompt.
func toolsVersion(tools []openai.Tool) string {
	if len(tools) == 0 {
		return "v0"
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return "v0"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4])
}
