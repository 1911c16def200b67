// Package model is ticketd's only door to a language model: any OpenAI-compatible
// chat-completions endpoint, reached through github.com/sashabaranov/go-openai.
//
// It exists so that the rest of the pipeline never thinks about money or faults. Every
// logical call (after retries and continuations) is handed to a Recorder with its tokens
// and its cost from a per-model price table; transport faults (429, 5xx, resets, time-outs)
// are retried with backoff and surface as ErrTransport so that a worker can release its
// ticket without burning an attempt; the request is shaped on the wire for prompt caching
// (a prompt_cache_key per role and prefix version, and a warm-up gate so that the first
// request of a role writes the shared prefix to cache before the others send theirs).
package model

import (
	"context"
	"errors"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Role is one of the four jobs a model does for a ticket; each maps to its own endpoint,
// model and limits in config.
type Role string

// The roles, as they appear in config and in the `ticketd role: <role>` system line.
const (
	RoleTriage  Role = "triage"
	RoleMaker   Role = "maker"
	RoleChecker Role = "checker"
	RoleJudge   Role = "judge"
	// RoleArbiter decides between reviewers' findings that contradict each other. It is
	// not configured on its own: it runs on the judge's endpoint and model (a cheap model
	// that only decides), and is recorded under its own name.
	RoleArbiter Role = "arbiter"
)

// Roles lists every role in pipeline order.
var Roles = []Role{RoleTriage, RoleMaker, RoleChecker, RoleJudge}

// Errors a caller classifies with errors.Is.
var (
	// ErrTransport means the endpoint could not be reached or kept failing with
	// retryable faults (429, 5xx, connection resets, time-outs) until the retries ran
	// out. The ticket should be released, not failed: no attempt is burnt by it.
	ErrTransport = errors.New("model endpoint unavailable")
	// ErrRejected means the endpoint answered and refused the request (400, 401, 403,
	// 404, 422, or a quota error). Retrying the same request will not help; the message
	// says which setting to check.
	ErrRejected = errors.New("endpoint rejected the request")
	// ErrBadResponse means the endpoint answered 2xx with something that is not a chat
	// completion (a body that is not JSON, a streamed one). An answer without choices is a
	// transport fault instead (ErrorClassEmptyAnswer).
	ErrBadResponse = errors.New("model endpoint sent an unusable response")
	// ErrContextOverflow means the conversation no longer fits the model's context window,
	// whatever shape the server said it in (OpenAI's context_length_exceeded, vLLM's flat
	// 400, llama.cpp's exceed_context_size_error, a 500 whose text says so), or the
	// role's context_window says so before sending. It is the ticket's problem, never a
	// transport fault: compact the conversation, or fail the attempt.
	ErrContextOverflow = errors.New("the conversation exceeds the model's context window")
	// ErrQuota means the account is out of quota or credit (OpenAI insufficient_quota,
	// HTTP 402). Nothing else will succeed on that account tonight: stop the night. It
	// also matches ErrRejected.
	ErrQuota = errors.New("the model account is out of quota or credit")
	// ErrEndpointDown means the endpoint's circuit breaker is open after consecutive
	// transport failures; the request was not sent. It also matches ErrTransport.
	ErrEndpointDown = errors.New("model endpoint is marked down")
	// ErrContentFiltered means the provider's content filter refused the request (Azure
	// OpenAI's content_filter, LiteLLM's content_policy_violation): the ticket's text, or
	// the code the conversation quotes, set it off. It is the ticket's trouble, never the
	// endpoint's or a transport fault; the same conversation would be refused again.
	ErrContentFiltered = errors.New("the provider's content filter refused the request")
	// ErrRateLimited means the provider refused for a rate limit and said when it lifts,
	// later than the client waits inside one call (retry.max_delay): the *Fault's ResetAt
	// is when the ticket may run again. It also matches ErrTransport.
	ErrRateLimited = errors.New("model rate limit reached")
)

// Usage is what one call consumed, normalised across providers.
//
// Convention: PromptTokens is the whole prompt as the provider bills it; CachedTokens
// (read from cache) and CacheWriteTokens (written to cache, where a provider reports
// them) are parts of PromptTokens, never added to it. ReasoningTokens are part of
// CompletionTokens, as OpenAI reports them.
type Usage struct {
	PromptTokens     int64
	CachedTokens     int64
	CacheWriteTokens int64
	CompletionTokens int64
	ReasoningTokens  int64
}

// Add returns the sum of two usages (continuations of one logical call).
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CachedTokens:     u.CachedTokens + o.CachedTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		ReasoningTokens:  u.ReasoningTokens + o.ReasoningTokens,
	}
}

// Call is the record of one logical call, after its retries and continuations, handed to
// the Recorder whether it succeeded or not.
type Call struct {
	TicketID int64
	Attempt  int
	Role     Role
	Model    string
	Endpoint string
	Usage    Usage
	// UsageEstimated is true when some answer of the call carried no usage block: its
	// token counts are then estimated (see EstimateTokens) and its cost is an estimate.
	UsageEstimated bool
	// CompletionUnknown is true when some request of the call was abandoned before its
	// answer came whole (the endpoint's time-out, a cut body): the server may have
	// finished and billed it. Its prompt is counted as an estimate; its completion is not
	// known, so the call's cost is a lower bound.
	CompletionUnknown bool
	// CostUSD is the figure budgets count: the provider's own reported cost when every
	// answer carried one (OpenRouter usage.cost), else the price-table cost of Usage
	// (an estimate when UsageEstimated). nil when neither is known: unknown is
	// recorded as unknown, never as zero.
	CostUSD *float64
	// PriceCostUSD is the price-table figure, kept beside a provider-reported cost;
	// nil when the model has no price.
	PriceCostUSD *float64
	// ProviderCostUSD is the cost the provider reported itself, nil when it reported none.
	ProviderCostUSD *float64
	// CostSource says where CostUSD came from: CostSourceProvider, CostSourcePriceTable,
	// CostSourceEstimate, or CostSourceUnknown.
	CostSource string
	// Latency runs from the first byte sent (after any warm-up wait) to the end of the
	// call, retries, backoff and continuations included.
	Latency      time.Duration
	FinishReason string
	// ErrorClass is empty on success, else one of the ErrorClass* constants.
	ErrorClass string
	Error      string
	// Retries counts HTTP attempts repeated after a retryable fault; Timeouts counts
	// those of them that were time-outs, so slow endpoints are told apart from
	// failing ones.
	Retries       int
	Timeouts      int
	Continuations int
	StartedAt     time.Time
	// Compactions is copied from the Request.
	Compactions int
}

// Error classes recorded in Call.ErrorClass.
const (
	ErrorClassRateLimit   = "rate_limit"   // 429
	ErrorClassServer      = "server"       // 5xx, 409
	ErrorClassNetwork     = "network"      // reset, refused, EOF mid-body
	ErrorClassTimeout     = "timeout"      // per-request time-out, 408
	ErrorClassRejected    = "rejected"     // 4xx other than 408/409/429, quota
	ErrorClassBadResponse = "bad_response" // 2xx that is not a completion
	ErrorClassCanceled    = "canceled"     // the caller's context ended
	ErrorClassClient      = "client"       // refused before sending (library validation)
	// ErrorClassContextOverflow: the prompt does not fit the model's context (any status).
	ErrorClassContextOverflow = "context_overflow"
	// ErrorClassQuota: out of quota or credit (402, insufficient_quota).
	ErrorClassQuota = "quota"
	// ErrorClassContentFilter: the provider's content filter refused the prompt.
	ErrorClassContentFilter = "content_filter"
	// ErrorClassTruncated: a 2xx body cut mid-way; the provider may have billed it.
	ErrorClassTruncated = "truncated"
	// ErrorClassEmptyAnswer: a 2xx answer without choices (OpenRouter's model warming up);
	// retried, and counted by the breaker, as a transport fault.
	ErrorClassEmptyAnswer = "empty_answer"
	// ErrorClassEndpointDown: not sent, the endpoint's circuit breaker is open.
	ErrorClassEndpointDown = "endpoint_down"
)

// Where Call.CostUSD came from.
const (
	CostSourceProvider   = "provider"    // the provider's own usage.cost
	CostSourcePriceTable = "price_table" // reported usage × models.prices
	CostSourceEstimate   = "estimate"    // estimated usage × models.prices
	CostSourceUnknown    = "unknown"     // no price and no provider cost
)

// Recorder stores call records (the store's model_calls table). It is called with a
// context that is not cancelled with the caller's, so a call cut short still lands.
type Recorder interface {
	RecordModelCall(ctx context.Context, c Call) error
}

// Request is one logical chat call for a ticket.
type Request struct {
	Role     Role
	TicketID int64
	Attempt  int
	Messages []openai.ChatCompletionMessage
	Tools    []openai.Tool
	// JSON asks for a JSON object answer (response_format json_object).
	JSON bool
	// PrefixVersion names the version of the role's static prompt prefix for the
	// prompt_cache_key. Empty: a short hash of Tools, which by contract are fixed in
	// order and text, so the key changes exactly when the tool block does.
	PrefixVersion string
	// Compactions is how many compaction passes shrank the conversation just before this
	// request; it is recorded on the call.
	Compactions int
}

// Response is the answer of one logical call; with continuations, Message holds the
// merged content and Usage/CostUSD the sums.
type Response struct {
	Message      openai.ChatCompletionMessage
	FinishReason string
	Usage        Usage
	CostUSD      *float64
	// UsageEstimated is true when Usage is an estimate (the server sent no usage).
	UsageEstimated bool
}
