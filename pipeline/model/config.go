package model

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/spell"
)

// Defaults applied where a config field is zero.
const (
	DefaultTimeout = 5 * time.Minute
	// DefaultMaxAnswerBytes bounds one answer's body: far above any real completion (a
	// maker writing a whole large file), far below what would strain the daemon.
	DefaultMaxAnswerBytes   int64 = 4 << 20
	DefaultMaxRetries             = 5
	DefaultBaseDelay              = time.Second
	DefaultMaxDelay               = 60 * time.Second
	DefaultMaxWait                = 60 * time.Second
	DefaultWarmupWait             = 20 * time.Second
	DefaultMaxContinuations       = 2
	// DefaultMakerMaxOutput is large so that a maker answer is not cut at
	// finish_reason=length; the model's own limit caps it.
	DefaultMakerMaxOutput = 32000
	// DefaultMaxOutput is for triage, checker and judge, whose answers are short JSON.
	DefaultMaxOutput = 4000
	// CacheKeyAuto derives prompt_cache_key as "ticketd-<role>-<prefix version>".
	CacheKeyAuto = "auto"
	// CacheKeyOff sends no prompt_cache_key.
	CacheKeyOff = "off"
	// DefaultBreakerFailures is how many transport failures in a row mark an endpoint down.
	DefaultBreakerFailures = 5
	// DefaultProbeBase is the first wait before a down endpoint is probed; it doubles
	// after each failed probe up to DefaultProbeMax.
	DefaultProbeBase = 15 * time.Second
	DefaultProbeMax  = 5 * time.Minute
	// DefaultPreflightWait bounds how long the start-of-night preflight retries transport
	// faults and 429s before it gives up on an endpoint.
	DefaultPreflightWait = 5 * time.Minute
)

// The values of Endpoint.MaxTokensField.
const (
	MaxTokensFieldCompletion = "max_completion_tokens" // OpenAI's current field; the default
	MaxTokensFieldMaxTokens  = "max_tokens"            // older servers (Ollama reads only this)
	MaxTokensFieldBoth       = "both"                  // send both with the same value
)

// Endpoint is one OpenAI-compatible server.
type Endpoint struct {
	// BaseURL up to and including /v1; empty means https://api.openai.com/v1.
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the key. The key itself is
	// never in config and never logged. Empty: the server needs no key (llama.cpp,
	// Ollama, the scripted server).
	APIKeyEnv string `yaml:"api_key_env"`
	// Timeout bounds one HTTP request; default 5m.
	Timeout time.Duration `yaml:"timeout"`
	// PromptCacheKey, when false, never sends prompt_cache_key to this endpoint (NVIDIA
	// NIM and Azure answer 400 to unknown parameters); default true, and the global
	// models.prompt_cache_key: off turns it off everywhere.
	PromptCacheKey *bool `yaml:"prompt_cache_key"`
	// Headers are sent with every request, e.g. OpenRouter's HTTP-Referer and X-Title.
	// Values are plain text in config: put secrets in HeaderEnv.
	Headers map[string]string `yaml:"headers"`
	// HeaderEnv maps a header name to the environment variable holding its value, for
	// secrets (Azure's api-key). An unset variable is an error at start.
	HeaderEnv map[string]string `yaml:"header_env"`
	// Query parameters added to every request URL, e.g. Azure's api-version.
	Query map[string]string `yaml:"query"`
	// ExtraBody are static JSON fields added to every chat request (a field ticketd
	// sets itself is never overridden), e.g. OpenRouter's provider routing.
	ExtraBody map[string]any `yaml:"extra_body"`
	// MaxTokensField names the output-limit field: max_completion_tokens (default),
	// max_tokens (Ollama ignores the former), or both.
	MaxTokensField string `yaml:"max_tokens_field"`
	// ParallelToolCalls, when set, is sent as parallel_tool_calls with requests that
	// offer tools; unset sends nothing (the server's default).
	ParallelToolCalls *bool `yaml:"parallel_tool_calls"`
	// MaxAnswerBytes bounds the body of one answer, in bytes; 0 means
	// DefaultMaxAnswerBytes (4 MiB). A larger answer is the endpoint's fault: never read
	// whole, recorded with its size, and never sent back.
	MaxAnswerBytes int64 `yaml:"max_answer_bytes"`
}

// RoleConfig maps a role to an endpoint and a model.
type RoleConfig struct {
	Endpoint        string `yaml:"endpoint"`
	Model           string `yaml:"model"`
	ReasoningEffort string `yaml:"reasoning_effort"` // optional
	// MaxOutputTokens defaults to 32000 for the maker and 4000 for the others, and is
	// capped by the model's Price.MaxOutput when known, since providers reject a request
	// above the model's limit.
	MaxOutputTokens int `yaml:"max_output_tokens"`
	// ContextWindow is the model's context in tokens as this endpoint serves it (vLLM's
	// max_model_len, llama.cpp's --ctx-size); 0 unknown. When set, the output limit sent
	// is capped to what is left after the (estimated) prompt, a prompt that leaves less
	// than MinOutputRoom fails with ErrContextOverflow before sending, and compaction
	// reads it (Client.ContextWindow).
	ContextWindow int `yaml:"context_window"`
}

// MinOutputRoom is the fewest output tokens a request with a known context window must
// leave room for; less is reported as ErrContextOverflow without sending.
const MinOutputRoom = 256

// BreakerConfig is the per-endpoint circuit breaker.
type BreakerConfig struct {
	// Failures in a row (5xx, resets, time-outs, truncated bodies; not 429s) that mark
	// an endpoint down; default 5, negative disables the breaker.
	Failures int `yaml:"failures"`
	// ProbeBase is the first wait before probing a down endpoint; default 15s, doubling
	// up to ProbeMax (default 5m).
	ProbeBase time.Duration `yaml:"probe_base"`
	ProbeMax  time.Duration `yaml:"probe_max"`
}

// Price is in USD per million tokens.
type Price struct {
	Input float64 `yaml:"input"`
	// CachedInput: 0 means no discount is known, and cached tokens are billed at Input
	// (over-counting is safer than under-counting).
	CachedInput float64 `yaml:"cached_input"`
	// CacheWrite: 0 means writes carry no surcharge and are billed at Input (OpenAI).
	CacheWrite float64 `yaml:"cache_write"`
	Output     float64 `yaml:"output"`
	// MaxOutput is the model's own output limit in tokens; 0 unknown.
	MaxOutput int `yaml:"max_output"`
}

// RetryConfig bounds the retries of transport faults.
type RetryConfig struct {
	// MaxRetries after the first attempt; 0 means the default 5, negative disables.
	MaxRetries int           `yaml:"max_retries"`
	BaseDelay  time.Duration `yaml:"base_delay"` // default 1s
	MaxDelay   time.Duration `yaml:"max_delay"`  // default 60s; Retry-After may exceed it
	// MaxWait is the longest a call waits for a 429's announced reset (default 60s): one
	// further away fails the call with ErrRateLimited and its ResetAt, and the ticket waits
	// in the queue instead of holding a worker. Another fault's longer Retry-After (a 503
	// for maintenance) fails the call with ErrTransport at once, likewise.
	MaxWait time.Duration `yaml:"max_wait"`
}

// Config is the `models:` section of ticketd's configuration.
type Config struct {
	Endpoints map[string]Endpoint `yaml:"endpoints"`
	Roles     map[Role]RoleConfig `yaml:"roles"`
	// Prices by model name, merged over DefaultPrices (an entry replaces the default
	// entry of the same name as a whole).
	Prices map[string]Price `yaml:"prices"`
	// CacheKey: "auto" (default) sends prompt_cache_key "ticketd-<role>-<prefix
	// version>"; "off" sends none; any other value replaces the "ticketd" part.
	CacheKey string      `yaml:"prompt_cache_key"`
	Retry    RetryConfig `yaml:"retry"`
	// WarmupWait bounds how long the requests of a role wait for that role's first
	// request to answer; default 20s.
	WarmupWait time.Duration `yaml:"warmup_wait"`
	// MaxContinuations bounds the finish_reason=length continuations; default 2,
	// negative disables.
	MaxContinuations int `yaml:"max_continuations"`
	// Breaker marks an endpoint down after consecutive transport failures.
	Breaker BreakerConfig `yaml:"breaker"`
	// PreflightTimeout, when set, bounds each preflight request below its endpoint's
	// timeout; 0 (the default) uses the endpoint's timeout, as the night does.
	PreflightTimeout time.Duration `yaml:"preflight_timeout"`
	// PreflightWait is how long the preflight retries transport faults and 429s (with the
	// night's backoff) before the night fails; default 5m.
	PreflightWait time.Duration `yaml:"preflight_wait"`
}

// reservedBody are the request fields ticketd sets itself; extra_body may not name them.
var reservedBody = []string{"model", "messages", "tools", "tool_choice", "stream", "max_tokens",
	"max_completion_tokens", "response_format", "prompt_cache_key", "reasoning_effort", "parallel_tool_calls"}

var headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

var reasoningEfforts = []string{"", "none", "minimal", "low", "medium", "high", "xhigh", "max"}

// Validate checks that every role names a defined endpoint and a model, and that the
// numbers make sense. All problems are reported at once, each naming its config path.
func (c Config) Validate() error {
	var p problems
	for _, name := range slices.Sorted(maps.Keys(c.Endpoints)) {
		p.endpoint("models.endpoints."+name, c.Endpoints[name])
	}
	for _, r := range slices.Sorted(maps.Keys(c.Roles)) {
		if !slices.Contains(Roles, r) {
			p.add("models.roles.%s: unknown role%s; the roles are triage, maker, checker, judge", r, spell.Hint(string(r), []string{"triage", "maker", "checker", "judge"}))
		}
	}
	for _, r := range Roles {
		p.role(c, r)
	}
	p.limits(c)
	return errors.Join(p...)
}

// problems collects every finding of Validate, so that an operator fixes a config in one
// pass instead of one error per restart.
type problems []error

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Errorf(format, args...)) }

// endpoint checks one models.endpoints entry; path is its config path.
func (p *problems) endpoint(path string, ep Endpoint) {
	if ep.BaseURL != "" {
		u, err := url.Parse(ep.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add("%s.base_url: %q is not an http(s) URL; write it like https://api.openai.com/v1", path, ep.BaseURL)
		}
	}
	if ep.Timeout < 0 {
		p.add("%s.timeout: %s is negative; use a duration such as 5m", path, ep.Timeout)
	}
	if ep.MaxAnswerBytes < 0 || ep.MaxAnswerBytes > 0 && ep.MaxAnswerBytes < 64<<10 {
		p.add("%s.max_answer_bytes: must be at least 65536 (64 KiB), got %d; 0 means the default, 4194304", path, ep.MaxAnswerBytes)
	}
	if strings.HasPrefix(ep.APIKeyEnv, "sk-") {
		p.add("%s.api_key_env: holds what looks like a key itself; put the key in an environment variable and name the variable here", path)
	}
	p.headers(path, ep)
	p.requestShape(path, ep)
}

// requestShape checks what an endpoint adds to or renames in every request: a mistake
// there would make every request of the night fail the same way.
func (p *problems) requestShape(path string, ep Endpoint) {
	for _, k := range slices.Sorted(maps.Keys(ep.Query)) {
		if k == "" {
			p.add("%s.query: an empty parameter name", path)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ep.ExtraBody)) {
		if slices.Contains(reservedBody, k) {
			p.add("%s.extra_body.%s: ticketd sets this field itself; use the dedicated setting (max_tokens_field, prompt_cache_key, parallel_tool_calls, models.roles)", path, k)
		} else if _, err := json.Marshal(ep.ExtraBody[k]); err != nil {
			p.add("%s.extra_body.%s: cannot be sent as JSON: %v", path, k, err)
		}
	}
	switch ep.MaxTokensField {
	case "", MaxTokensFieldCompletion, MaxTokensFieldMaxTokens, MaxTokensFieldBoth:
	default:
		p.add("%s.max_tokens_field: %q is not max_completion_tokens, max_tokens or both%s", path, ep.MaxTokensField, spell.Hint(ep.MaxTokensField, []string{"max_completion_tokens", "max_tokens", "both"}))
	}
}

// headers checks an endpoint's headers and header_env: plain values must not be secrets
// (config files get shared), and header_env must name variables, never hold their values.
func (p *problems) headers(path string, ep Endpoint) {
	for _, h := range slices.Sorted(maps.Keys(ep.Headers)) {
		v := ep.Headers[h]
		switch {
		case !headerNameRe.MatchString(h):
			p.add("%s.headers: %q is not a valid header name", path, h)
		case looksSecret(h, v):
			p.add("%s.headers.%s: looks like a secret; name an environment variable under header_env instead", path, h)
		case strings.ContainsAny(v, "\r\n"):
			p.add("%s.headers.%s: the value contains a line break", path, h)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(ep.HeaderEnv)) {
		if !headerNameRe.MatchString(h) {
			p.add("%s.header_env: %q is not a valid header name", path, h)
		}
		if v := ep.HeaderEnv[h]; v == "" || strings.HasPrefix(v, "sk-") || strings.ContainsAny(v, " =") {
			p.add("%s.header_env.%s: %q is not an environment variable name; write the variable's name, never its value", path, h, v)
		}
		if _, dup := ep.Headers[h]; dup {
			p.add("%s.header_env.%s: also set under headers; keep one", path, h)
		}
	}
}

// role checks models.roles.<r>: every role must be configured, since a night needs all of
// them, and its endpoint must exist.
func (p *problems) role(c Config, r Role) {
	rc, ok := c.Roles[r]
	path := "models.roles." + string(r)
	if !ok {
		p.add("%s: missing; every role (triage, maker, checker, judge) needs an endpoint and a model", path)
		return
	}
	endpoints := slices.Sorted(maps.Keys(c.Endpoints))
	if rc.Endpoint == "" {
		p.add("%s.endpoint: empty; name one of models.endpoints (%s)", path, strings.Join(endpoints, ", "))
	} else if _, ok := c.Endpoints[rc.Endpoint]; !ok {
		p.add("%s.endpoint: %q is not defined in models.endpoints%s", path, rc.Endpoint, spell.Hint(rc.Endpoint, endpoints))
	}
	if strings.TrimSpace(rc.Model) == "" {
		p.add("%s.model: empty; name the model the endpoint serves, e.g. gpt-4.1-mini", path)
	}
	if !slices.Contains(reasoningEfforts, rc.ReasoningEffort) {
		p.add("%s.reasoning_effort: %q is not one of none, minimal, low, medium, high, xhigh, max%s", path, rc.ReasoningEffort, spell.Hint(rc.ReasoningEffort, []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}))
	}
	if rc.MaxOutputTokens < 0 {
		p.add("%s.max_output_tokens: %d is negative", path, rc.MaxOutputTokens)
	}
	switch {
	case rc.ContextWindow < 0:
		p.add("%s.context_window: %d is negative", path, rc.ContextWindow)
	case rc.ContextWindow > 0 && rc.ContextWindow < 2*MinOutputRoom:
		p.add("%s.context_window: %d tokens is too small to hold a prompt and an answer; give the model's context length, e.g. 32768", path, rc.ContextWindow)
	}
}

// limits checks the prices and the durations of the section: none may be negative.
func (p *problems) limits(c Config) {
	for _, name := range slices.Sorted(maps.Keys(c.Prices)) {
		pr := c.Prices[name]
		if pr.Input < 0 || pr.CachedInput < 0 || pr.CacheWrite < 0 || pr.Output < 0 || pr.MaxOutput < 0 {
			p.add("models.prices.%s: prices and max_output must not be negative", name)
		}
	}
	if c.Retry.MaxWait < 0 {
		p.add("models.retry.max_wait: %s is negative; use a duration such as 60s", c.Retry.MaxWait)
	}
	if c.Retry.BaseDelay < 0 || c.Retry.MaxDelay < 0 {
		p.add("models.retry: base_delay and max_delay must not be negative")
	}
	if c.WarmupWait < 0 {
		p.add("models.warmup_wait: %s is negative", c.WarmupWait)
	}
	if c.Breaker.ProbeBase < 0 || c.Breaker.ProbeMax < 0 {
		p.add("models.breaker: probe_base and probe_max must not be negative")
	}
	if c.PreflightTimeout < 0 {
		p.add("models.preflight_timeout: %s is negative", c.PreflightTimeout)
	}
	if c.PreflightWait < 0 {
		p.add("models.preflight_wait: %s is negative; use a duration such as 5m", c.PreflightWait)
	}
}

// PriceFor returns the price of a model from the configured table merged over
// DefaultPrices. A dated snapshot ("gpt-4.1-2025-04-14") falls back to its base name.
func (c Config) PriceFor(model string) (Price, bool) {
	for _, name := range []string{model, undated(model)} {
		if p, ok := c.Prices[name]; ok {
			return p, true
		}
		if p, ok := defaultPrices[name]; ok {
			return p, true
		}
	}
	return Price{}, false
}

// undated strips a trailing -YYYY-MM-DD snapshot date.
func undated(model string) string {
	const n = len("-2006-01-02")
	if len(model) <= n {
		return model
	}
	if _, err := time.Parse("-2006-01-02", model[len(model)-n:]); err != nil {
		return model
	}
	return model[:len(model)-n]
}

// maxOutput is the max_completion_tokens sent for a role.
func (c Config) maxOutput(r Role, model string) int {
	def := DefaultMaxOutput
	if r == RoleMaker {
		def = DefaultMakerMaxOutput
	}
	n := cmp.Or(c.Roles[r].MaxOutputTokens, def)
	if p, ok := c.PriceFor(model); ok && p.MaxOutput > 0 && n > p.MaxOutput {
		n = p.MaxOutput
	}
	return n
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	c.CacheKey = cmp.Or(c.CacheKey, CacheKeyAuto)
	switch {
	case c.Retry.MaxRetries == 0:
		c.Retry.MaxRetries = DefaultMaxRetries
	case c.Retry.MaxRetries < 0:
		c.Retry.MaxRetries = 0
	}
	c.Retry.BaseDelay = cmp.Or(c.Retry.BaseDelay, DefaultBaseDelay)
	c.Retry.MaxDelay = cmp.Or(c.Retry.MaxDelay, DefaultMaxDelay)
	c.Retry.MaxWait = cmp.Or(c.Retry.MaxWait, DefaultMaxWait)
	c.WarmupWait = cmp.Or(c.WarmupWait, DefaultWarmupWait)
	switch {
	case c.MaxContinuations == 0:
		c.MaxContinuations = DefaultMaxContinuations
	case c.MaxContinuations < 0:
		c.MaxContinuations = 0
	}
	c.Breaker.Failures = cmp.Or(c.Breaker.Failures, DefaultBreakerFailures)
	c.Breaker.ProbeBase = cmp.Or(c.Breaker.ProbeBase, DefaultProbeBase)
	c.Breaker.ProbeMax = max(cmp.Or(c.Breaker.ProbeMax, DefaultProbeMax), c.Breaker.ProbeBase)
	c.PreflightWait = cmp.Or(c.PreflightWait, DefaultPreflightWait)
	return c
}

// looksSecret reports whether a static header value looks like a credential.
func looksSecret(name, value string) bool {
	n := strings.ToLower(name)
	v := strings.ToLower(strings.TrimSpace(value))
	return n == "authorization" || strings.Contains(n, "key") || strings.Contains(n, "token") || strings.Contains(n, "secret") ||
		strings.HasPrefix(v, "bearer ") || strings.HasPrefix(v, "sk-")
}
