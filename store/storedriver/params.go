package storedriver

// Params are the arguments of one multi-argument statement of SQL, named: Args returns
// them in the order the statement's text numbers them, so that order lives here once,
// beside the statement's doc, instead of in every call. Flags cross as 0 or 1, and a
// field documented "NULL when ..." crosses as nil.
type Params interface {
	Args() []any
}

// EnqueueParams are Enqueue's arguments.
type EnqueueParams struct {
	Source, ExternalID, Repo, Title, Body string
	Labels                                string // a JSON array
	Priority, MaxAttempts                 int
	RunAfter, CreatedAt, UpdatedAt        int64
}

func (p EnqueueParams) Args() []any {
	return []any{p.Source, p.ExternalID, p.Repo, p.Title, p.Body, p.Labels, p.Priority, p.MaxAttempts,
		p.RunAfter, p.CreatedAt, p.UpdatedAt}
}

// CompleteParams are Complete's arguments.
type CompleteParams struct {
	FinishedAt, UpdatedAt      int64
	Branch, ResultDir, Summary string
	ID, Token                  int64
}

func (p CompleteParams) Args() []any {
	return []any{p.FinishedAt, p.UpdatedAt, p.Branch, p.ResultDir, p.Summary, p.ID, p.Token}
}

// CompleteEndedParams are CompleteEnded's arguments: Complete's, then what its event says.
type CompleteEndedParams struct {
	CompleteParams
	Kind, From, To string
}

func (p CompleteEndedParams) Args() []any {
	return append(p.CompleteParams.Args(), p.Kind, p.From, p.To)
}

// CompleteBatchParams are BatchCompleter.CompleteBatch's arguments: when (finished and
// updated), the tickets (one entry per ticket in each slice), and what their events say.
type CompleteBatchParams struct {
	At                              int64
	IDs, Tokens                     []int64
	Branches, ResultDirs, Summaries []string
	Kind, From, To                  string
}

func (p CompleteBatchParams) Args() []any {
	return []any{p.At, p.IDs, p.Tokens, p.Branches, p.ResultDirs, p.Summaries, p.Kind, p.From, p.To}
}

// EndAttemptParams are EndAttempt's arguments.
type EndAttemptParams struct {
	State    string
	Attempts int
	RunAfter int64
	// FinishedAt is an int64, or nil for NULL (the ticket is not finished).
	FinishedAt any
	UpdatedAt  int64
	// Reason replaces the ticket's; Branch and ResultDir do when not "".
	Reason, Branch, ResultDir string
	ID, Token                 int64
}

func (p EndAttemptParams) Args() []any {
	return []any{p.State, p.Attempts, p.RunAfter, p.FinishedAt, p.UpdatedAt, p.Reason, p.Branch, p.ResultDir,
		p.ID, p.Token}
}

// FinishCancelledParams are FinishCancelled's arguments.
type FinishCancelledParams struct {
	FinishedAt, UpdatedAt int64
	Reason                string
	ID, Token             int64
}

func (p FinishCancelledParams) Args() []any {
	return []any{p.FinishedAt, p.UpdatedAt, p.Reason, p.ID, p.Token}
}

// CancelQueuedParams are CancelQueued's arguments; From is the state the ticket must be in.
type CancelQueuedParams struct {
	FinishedAt, UpdatedAt int64
	Reason                string
	ID                    int64
	From                  string
}

func (p CancelQueuedParams) Args() []any {
	return []any{p.FinishedAt, p.UpdatedAt, p.Reason, p.ID, p.From}
}

// RequeueParams are Requeue's arguments; From is the state the ticket must be in.
type RequeueParams struct {
	RunAfter, UpdatedAt int64
	Reason              string
	ID                  int64
	From                string
}

func (p RequeueParams) Args() []any {
	return []any{p.RunAfter, p.UpdatedAt, p.Reason, p.ID, p.From}
}

// AcceptParams are Accept's arguments.
type AcceptParams struct {
	FinishedAt, UpdatedAt     int64
	Branch, ResultDir, Reason string
	ID                        int64
}

func (p AcceptParams) Args() []any {
	return []any{p.FinishedAt, p.UpdatedAt, p.Branch, p.ResultDir, p.Reason, p.ID}
}

// AskHumanParams are AskHuman's arguments.
type AskHumanParams struct {
	Attempts  int
	UpdatedAt int64
	Reason    string
	Question  string
	// Branch and ResultDir replace the ticket's when not "".
	Branch, ResultDir string
	ID, Token         int64
}

func (p AskHumanParams) Args() []any {
	return []any{p.Attempts, p.UpdatedAt, p.Reason, p.Question, p.Branch, p.ResultDir, p.ID, p.Token}
}

// NeedBudgetParams are NeedBudget's arguments.
type NeedBudgetParams struct {
	Attempts  int
	UpdatedAt int64
	Reason    string
	// Branch and ResultDir replace the ticket's when not "".
	Branch, ResultDir string
	ID, Token         int64
}

func (p NeedBudgetParams) Args() []any {
	return []any{p.Attempts, p.UpdatedAt, p.Reason, p.Branch, p.ResultDir, p.ID, p.Token}
}

// AddBudgetParams are AddBudget's arguments.
type AddBudgetParams struct {
	RunAfter, UpdatedAt int64
	Reason              string
	Dollars             float64
	ID                  int64
}

func (p AddBudgetParams) Args() []any {
	return []any{p.RunAfter, p.UpdatedAt, p.Reason, p.Dollars, p.ID}
}

// AppendEventParams are AppendEvent's arguments; AppendEventFromRow takes the first six.
type AppendEventParams struct {
	TicketID, At             int64
	Kind, FromState, ToState string
	Reason                   string
	Attempt                  int
	Actor                    string
}

func (p AppendEventParams) Args() []any {
	return []any{p.TicketID, p.At, p.Kind, p.FromState, p.ToState, p.Reason, p.Attempt, p.Actor}
}

// FromRowArgs are AppendEventFromRow's arguments: the attempt and actor come from the row.
func (p AppendEventParams) FromRowArgs() []any { return p.Args()[:6] }

// InsertRequeueParams are InsertRequeue's arguments.
type InsertRequeueParams struct {
	TicketID, At     int64
	Actor, FromState string
	Attempts         int
	Note, Branch     string
}

func (p InsertRequeueParams) Args() []any {
	return []any{p.TicketID, p.At, p.Actor, p.FromState, p.Attempts, p.Note, p.Branch}
}

// FinishRunParams are FinishRun's arguments.
type FinishRunParams struct {
	EndedAt, AfterEventID, ID int64
	Outcome, Error            string
}

func (p FinishRunParams) Args() []any {
	return []any{p.EndedAt, p.AfterEventID, p.ID, p.Outcome, p.Error}
}

// InsertModelCallParams are InsertModelCall's arguments.
type InsertModelCallParams struct {
	TicketID                                                                  int64
	RunID                                                                     int64 // NULL when 0
	Attempt                                                                   int
	Role, Model, Endpoint                                                     string
	PromptTokens, CachedTokens, CacheWriteTokens, CompletionTokens, Reasoning int64
	CostUSD                                                                   *float64 // NULL when nil
	LatencyMS                                                                 int64
	FinishReason, ErrorClass, Error                                           string
	Retries                                                                   int
	StartedAt                                                                 int64
	UsageReported                                                             bool
	CostSource                                                                string
	PriceCostUSD, ProviderCostUSD                                             *float64 // NULL when nil
	Compactions                                                               int
	CompletionUnknown                                                         bool
	Continuations                                                             int
}

func (p InsertModelCallParams) Args() []any {
	return []any{p.TicketID, nullID(p.RunID), p.Attempt, p.Role, p.Model, p.Endpoint,
		p.PromptTokens, p.CachedTokens, p.CacheWriteTokens, p.CompletionTokens, p.Reasoning, nullFloat(p.CostUSD),
		p.LatencyMS, p.FinishReason, p.ErrorClass, p.Error, p.Retries, p.StartedAt,
		flag(p.UsageReported), p.CostSource, nullFloat(p.PriceCostUSD), nullFloat(p.ProviderCostUSD), p.Compactions,
		flag(p.CompletionUnknown), p.Continuations}
}

// InsertToolCallParams are InsertToolCall's arguments.
type InsertToolCallParams struct {
	TicketID            int64
	Attempt, Step       int
	Tool, Input, Result string
	OK                  bool
	DurationMS, At      int64
	Rung                string
}

func (p InsertToolCallParams) Args() []any {
	return []any{p.TicketID, p.Attempt, p.Step, p.Tool, p.Input, p.Result, flag(p.OK), p.DurationMS, p.At, p.Rung}
}

// InsertReviewParams are InsertReview's arguments.
type InsertReviewParams struct {
	TicketID                      int64
	Attempt, Round, Kept, Dropped int
	At                            int64
	Reviewer                      string
}

func (p InsertReviewParams) Args() []any {
	return []any{p.TicketID, p.Attempt, p.Round, p.Kept, p.Dropped, p.At, p.Reviewer}
}

// InsertEndpointEventParams are InsertEndpointEvent's arguments.
type InsertEndpointEventParams struct {
	RunID             int64 // NULL when 0
	Endpoint, BaseURL string
	Down              bool
	Since, At         int64
	LastError         string
}

func (p InsertEndpointEventParams) Args() []any {
	return []any{nullID(p.RunID), p.Endpoint, p.BaseURL, flag(p.Down), p.Since, p.At, p.LastError}
}

// SaveBaselineParams are SaveBaseline's arguments.
type SaveBaselineParams struct {
	Repo, BaseCommit, ChecksHash  string
	Results, Flaky                string // JSON
	DurationMS, CreatedAt, UsedAt int64
}

func (p SaveBaselineParams) Args() []any {
	return []any{p.Repo, p.BaseCommit, p.ChecksHash, p.Results, p.Flaky, p.DurationMS, p.CreatedAt, p.UsedAt}
}

// RecordEnvironmentParams are RecordEnvironment's arguments.
type RecordEnvironmentParams struct {
	Repo, Node, Key string
	OK, Cached      bool
	BuiltAt         any // int64, or nil for NULL
	TookMS, At      int64
	Error, Output   string
}

func (p RecordEnvironmentParams) Args() []any {
	return []any{p.Repo, p.Node, p.Key, flag(p.OK), flag(p.Cached), p.BuiltAt, p.TookMS, p.At, p.Error, p.Output}
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func nullFloat(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// HeartbeatParams are Heartbeat's arguments.
type HeartbeatParams struct {
	LeaseExpiresAt, UpdatedAt, ID, Token int64
}

func (p HeartbeatParams) Args() []any { return []any{p.LeaseExpiresAt, p.UpdatedAt, p.ID, p.Token} }

// RetextParams are Retext's arguments.
type RetextParams struct {
	ID                        int64
	Repo, Title, Body, Labels string // Labels: a JSON array
	Priority                  int
	UpdatedAt                 int64
}

func (p RetextParams) Args() []any {
	return []any{p.Repo, p.Title, p.Body, p.Labels, p.Priority, p.UpdatedAt, p.ID}
}

// SaveTriageParams are SaveTriage's arguments.
type SaveTriageParams struct {
	Triage               string // JSON
	UpdatedAt, ID, Token int64
}

func (p SaveTriageParams) Args() []any { return []any{p.Triage, p.UpdatedAt, p.ID, p.Token} }

// ToQueueParams are the arguments of the transitions that put a waiting ticket back in the
// queue: RequeueParked, Answered, RequeueNeedsInfo.
type ToQueueParams struct {
	RunAfter, UpdatedAt int64
	Reason              string
	ID                  int64
}

func (p ToQueueParams) Args() []any { return []any{p.RunAfter, p.UpdatedAt, p.Reason, p.ID} }

// EscalateCrashedParams are EscalateCrashed's arguments.
type EscalateCrashedParams struct {
	FinishedAt, UpdatedAt int64
	Reason                string
	ID                    int64
}

func (p EscalateCrashedParams) Args() []any { return []any{p.FinishedAt, p.UpdatedAt, p.Reason, p.ID} }

// InsertQuestionParams are InsertQuestion's arguments.
type InsertQuestionParams struct {
	Attempt  int
	Question string
	AskedAt  int64
	TicketID int64
}

func (p InsertQuestionParams) Args() []any {
	return []any{p.Attempt, p.Question, p.AskedAt, p.TicketID}
}

// AnswerQuestionParams are AnswerQuestion's arguments.
type AnswerQuestionParams struct {
	Answer, AnsweredBy string
	AnsweredAt         int64
	TicketID           int64
}

func (p AnswerQuestionParams) Args() []any {
	return []any{p.Answer, p.AnsweredBy, p.AnsweredAt, p.TicketID}
}

// SaveArtifactParams are SaveArtifact's arguments.
type SaveArtifactParams struct {
	TicketID  int64
	Path      string
	Content   []byte
	UpdatedAt int64
}

func (p SaveArtifactParams) Args() []any { return []any{p.TicketID, p.Path, p.Content, p.UpdatedAt} }

// InsertIntakeSkipParams are InsertIntakeSkip's arguments.
type InsertIntakeSkipParams struct {
	Source, Path, Reason string
	At                   int64
}

func (p InsertIntakeSkipParams) Args() []any { return []any{p.Source, p.Path, p.Reason, p.At} }
