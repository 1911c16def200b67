package storedriver

// SQL is an engine's statements, one per step of a store operation. Each field says what
// the store passes (a Params type, whose Args gives the order, or the args in order) and
// what it scans (columns, in order); "ticket columns"
// are TicketColumns. A statement named "transition" sets the columns it names plus the
// event reservation of ReserveEvent, and changes the row only under its WHERE.
type SQL struct {
	// Tickets.

	// Enqueue (Insert): EnqueueParams; it reserves the first event (a fresh
	// last_event_id) and inserts nothing when (source, external_id) exists.
	Enqueue string
	// TicketBySource: source, external_id -> id.
	TicketBySource string
	// SameText: source, repo, title, body -> id of the source's earliest ticket of that
	// repository with that text.
	SameText string
	// Retext (no reservation): RetextParams; the repo, title, body, labels and priority of
	// a ticket no worker ever claimed (queued, fence_token 0), updated_at; no row otherwise.
	Retext string
	// GetTicket: id -> ticket columns.
	GetTicket string
	// TicketExists: id -> 1.
	TicketExists string
	// CurrentState: id -> state, attempts.
	CurrentState string
	// List builds the statement for a list of tickets, newest first, each with its model
	// call totals: ticket columns, then calls, prompt, cached, completion tokens, cost
	// (0 when none), 1 when some call's cost or completion is unknown (else 0), and 1 when
	// some call's usage was estimated (usage_reported 0).
	List func(ListSpec) (query string, args []any)

	// Leases.

	// Settle (query, rows): now, max_rescues. Ends the running tickets whose lease expired
	// by now and that must not run again (rescues+1 >= max_rescues: escalated, reason
	// "lease of OWNER expired: N lost leases reach the limit of MAX (the ticket may be
	// crashing its worker; see its events and the daemon log)"; cancel requested:
	// cancelled, reason "cancel requested; lease of OWNER expired"), counting the lost
	// lease in rescues, lease_expires_at NULL, finished_at and updated_at now -> id, state,
	// attempts, reason of each.
	Settle string
	// Heartbeat (transition without reservation): HeartbeatParams.
	Heartbeat string
	// CancelRequested: id -> cancel_requested (0, 1).
	CancelRequested string
	// Leased: id, token -> attempts, the attempt that escalates (max_attempts +
	// attempts_before), cancel_requested, lease_owner of a running ticket with that fence
	// token.
	Leased string
	// Complete (transition, fenced): CompleteParams; state done, lease_expires_at NULL, reason ''.
	Complete string
	// CompleteEnded, optional ("" where statements cost no round trip): Complete, the event
	// AppendEventFromRow would append after it (kind, from, to; reason '', at FinishedAt)
	// and the end of the ticket's open round (outcome To, at FinishedAt) in one statement:
	// CompleteEndedParams. It changes one row when the fenced update matched, none otherwise.
	CompleteEnded string
	// EndAttempt (transition, fenced): EndAttemptParams; lease_expires_at NULL.
	EndAttempt string
	// FinishCancelled (transition, fenced): FinishCancelledParams; state cancelled, lease_expires_at NULL.
	FinishCancelled string
	// SaveTriage (fenced, no reservation): SaveTriageParams.
	SaveTriage string
	// CancelQueued (transition): CancelQueuedParams, From queued, parked or needs_info; to
	// cancelled, question ''.
	CancelQueued string
	// FlagCancel (transition): updated_at, reason, id; cancel_requested 1 on a running one.
	FlagCancel string
	// RequeueParked (transition): ToQueueParams; a parked ticket back
	// to queued, its counts kept.
	RequeueParked string
	// ParkedDue: run_after limit -> id, attempts of the parked tickets whose run_after is
	// at most it. Unpark (transition): run_after, updated_at, id; one of them to queued.
	ParkedDue, Unpark string
	// Requeue (transition): RequeueParams; state queued, attempts kept (the next attempt numbers on) and attempts_before set to
	// them (a fresh budget), crashes 0, fence_token+1, lease_expires_at and finished_at
	// NULL, cancel_requested 0, question ''.
	Requeue string
	// Accept (transition): AcceptParams; an
	// escalated ticket to done (a human accepted its kept change), summary kept.
	Accept string

	// Questions (a maker that asks a human).

	// AskHuman (transition, fenced): AskHumanParams; state needs_info,
	// lease_expires_at NULL, questions+1.
	AskHuman string
	// InsertQuestion: InsertQuestionParams; the question numbered the
	// ticket's questions count.
	InsertQuestion string
	// AnswerQuestion: AnswerQuestionParams; answers the ticket's
	// latest question (n = its questions count) when it is unanswered.
	AnswerQuestion string
	// NeedBudget (fenced transition): NeedBudgetParams; state needs_budget, lease cleared.
	// AddBudget (transition): AddBudgetParams; a
	// needs_budget ticket to queued with budget_extra_usd raised.
	NeedBudget, AddBudget string
	// Answered (transition): ToQueueParams; a needs_info ticket to
	// queued, question ''. RequeueNeedsInfo the same, its question left unanswered.
	Answered, RequeueNeedsInfo string
	// Questions: ticket id -> ticket_id, n, attempt, question, asked_at, answer (NULL when
	// none), answered_by, answered_at, comment_url, by n.
	Questions string
	// SetQuestionComment: comment_url, ticket id, n.
	SetQuestionComment string
	// WaitingForAnswer builds: source ('' for every source), then limit when limited ->
	// ticket columns, then n, attempt, question, asked_at, comment_url of the open
	// question, of the needs_info tickets by asked_at, id.
	WaitingForAnswer func(limited bool) string

	// Events.

	// ReserveEvent: id; reserves the ticket's next event and changes nothing else.
	ReserveEvent string
	// AppendEvent: AppendEventParams; writes the event the ticket's last transition reserved, linked to the head before it.
	AppendEvent string
	// AppendEventFromRow: AppendEventParams.FromRowArgs, with attempt and actor read from the ticket row
	// (attempts, lease_owner).
	AppendEventFromRow string
	// Events: ticket id -> id, ticket_id, at, kind, from_state, to_state, attempt, actor,
	// reason of each of its events, oldest first.
	Events string
	// TransportReleases: ticket id, run id -> how many of the ticket's events since the
	// run's start are releases for a transport fault (kind released, reason "transport:...").
	TransportReleases string

	// Model calls, tool calls, reviews, endpoint health, outputs.

	// InsertModelCall (Insert): InsertModelCallParams.
	InsertModelCall string
	// ModelCalls: ticket id -> id, ticket_id, run_id (0 for none), then the columns of
	// InsertModelCall from attempt on, in its order, oldest first.
	ModelCalls string
	// InsertToolCall (Insert): ticket_id, attempt, step, tool, args, result, ok,
	// duration_ms, at, rung.
	InsertToolCall string
	// ToolCalls: ticket id -> id, then InsertToolCall's columns in its order, oldest first.
	ToolCalls string
	// InsertReview: InsertReviewParams (ticket_id, attempt, round, kept, dropped, at, reviewer).
	InsertReview string
	// Reviews: ticket id -> InsertReview's columns, oldest first.
	Reviews string
	// InsertEndpointEvent: InsertEndpointEventParams (run_id, endpoint, base_url, down,
	// since, at, last_error).
	InsertEndpointEvent string
	// EndpointEvents: -> id, run_id (0 for none), then InsertEndpointEvent's columns from
	// endpoint on, oldest first; EndpointEventsRun the same for one run id.
	EndpointEvents, EndpointEventsRun string
	// RecordOutput: ticket_id, kind, url, created_at; nothing when (ticket, kind) exists.
	RecordOutput string
	// Unpublished: source, state, kind, limit -> ticket columns of the tickets of source in
	// state without an output of kind, by finished_at, id.
	Unpublished string
	// Outputs: ticket id -> ticket_id, kind, url, created_at.
	Outputs string

	// Nights.

	// StartRun (Insert): trigger, started_at; after_event_id is the newest event's id.
	StartRun string
	// SetRunSandbox: sandbox, id.
	SetRunSandbox string
	// RunWindow: id -> after_event_id, ended_at.
	RunWindow string
	// RunEnding: id -> after_event_id, outcome, error, and how many nodes joined it.
	RunEnding string
	// FinishRun: FinishRunParams; sets those, and the totals from the events after
	// after_event_id at or before ended_at (claimed, transitions into done and into escalated — not
	// the notes on a finished ticket — and retry) and the
	// cost of the model calls of the run.
	FinishRun string
	// Runs: limit -> id, trigger, sandbox, started_at, ended_at, outcome, error, worked
	// (distinct tickets claimed), claimed, done, escalated, retried, cost_usd, newest first.
	Runs string
	// NightTotals: -> outcome, count, max(ended_at) of the ended runs with an outcome.
	NightTotals string
	// JoinRunNode: run id, node, started_at; adds the node to the run, or marks it running
	// again (finished_at NULL, died 0, no lease until its first beat) when it rejoins.
	JoinRunNode string
	// FinishRunNode: finished_at, run id, node.
	FinishRunNode string
	// OpenRun: started-since -> id of the newest run started at or after it with a node
	// not finished.
	OpenRun string
	// RunNodes: run id -> node, started_at, finished_at, in the order they joined.
	RunNodes string
	// RunCost: run id -> sum of its model calls' cost_usd (0 when none), and of those with
	// cost_source estimate.
	RunCost string
	// UsageEstimates: -> calls, calls with usage_reported 0, calls with no cost or an
	// unknown completion, sum of cost_usd with cost_source estimate, and with cost_source
	// provider; UsageEstimatesRun: run id.
	UsageEstimates, UsageEstimatesRun string

	// Baselines.

	// LoadBaseline (query in a write): used_at, repo, base_commit, checks_hash; counts the
	// use -> results, flaky, duration_ms, created_at, used_at, uses.
	LoadBaseline string
	// SaveBaseline: SaveBaselineParams; replaces one with the same key (uses back to 0).
	SaveBaseline string
	// PruneBaselines: cutoff; deletes those used before it.
	PruneBaselines string

	// Reading the queue.

	// Due: now -> state, 0, count, min(run_after), min(lease_expires_at), count with
	// run_after <= now, per state of the unfinished tickets; DuePaused: paused JSON array,
	// now -> the same per state and whether the repository is paused (0, 1) in the second
	// column.
	Due, DuePaused string
	// CountByState: -> state, count.
	CountByState string
	// EventKinds: -> kind, count, rescues (lease_expired events to queued).
	EventKinds string
	// EventsByRepo: kind -> repo, count of the events of that kind on the repository's
	// tickets.
	EventsByRepo string
	// CallTotals: -> role, model, calls, errors, prompt, cached, completion, reasoning
	// tokens, cost (known only), latency_ms, by role and model.
	CallTotals string
	// NightTokens builds, for n run ids (the args): -> run_id, calls, prompt, cached and
	// completion tokens of the model calls charged to each of those runs that has any.
	NightTokens func(n int) string
	// ToolTotals builds: -> tool, calls, failed, sum of duration_ms, and per bucket the
	// calls with duration_ms at most it, by tool.
	ToolTotals func(bucketsMS []int64) string
	// Progress: id -> attempts, step and tool of the current attempt's latest tool call
	// (0, '' when none), latest tool call at, model calls of the attempt, latest started_at.
	Progress string
	// StatsTickets, StatsCalls, StatsFirstRequests, StatsReviews build Stats' statements,
	// over every ticket or (run) over those claimed in a run's window or charged to it by a
	// model call, with args after_event_id, end, run id. StatsTickets: -> state, attempts.
	// StatsCalls: -> count, cost, 1 if some cost unknown, prompt,
	// cached, completion tokens (unknown: no cost, or an unknown completion). StatsFirstRequests: -> role, cached, prompt tokens of each
	// ticket's first call per role. StatsReviews: -> rounds, dropped findings.
	StatsTickets, StatsCalls, StatsFirstRequests, StatsReviews func(run bool) string
	// TicketDurations: -> ticket id, its first claim's at, finished_at (NULL while open),
	// over every claimed ticket or (run) those claimed in the window, args after_event_id,
	// end.
	TicketDurations func(run bool) string

	// Artifacts (a ticket's results folder).

	// SaveArtifact: SaveArtifactParams; replaces the one at path.
	SaveArtifact string
	// Artifacts: ticket id -> path, size in bytes, updated_at, by path.
	Artifacts string
	// Artifact: ticket id, path -> content.
	Artifact string
	// GCArtifacts: cutoff; deletes the artifacts but report.md of unpruned tickets finished
	// before it.
	GCArtifacts string

	// Copying a store into another engine's (ticketctl migrate).

	// Tables are every table of the schema in an order that satisfies the foreign keys;
	// both engines list the same tables with the same columns, in the same order.
	Tables []Table
	// AfterCopy runs once the rows are in: it moves the id generators past the copied ids.
	AfterCopy string

	// FinishedBefore: cutoff -> ticket columns of the finished tickets finished before it,
	// by finished_at, id.
	FinishedBefore string

	// GCToolCalls: cutoff; empties args and result of the tool calls of unpruned tickets
	// finished before it. GCTickets: pruned_at, cutoff; empties body, triage, summary.
	GCToolCalls, GCTickets string

	// History that survives a requeue, nights closed by the living, crashes told from
	// tickets, the database's identity, intake's skipped files.

	// InsertRequeue: InsertRequeueParams; numbered one
	// past the ticket's requeues. Requeues: ticket id -> n, at, actor, from_state, attempts,
	// note, branch, by n. KeptBranches: -> ticket_id, branch of the requeues that kept one and of the rounds
	// (the fix branch a round goes on from).
	InsertRequeue, Requeues, KeptBranches string
	// Identity: -> the database's identity (store_meta).
	Identity string
	// BeatRunNode: lease_expires_at, run id, node; extends the node's lease on the night
	// while its part is unfinished.
	BeatRunNode string
	// OpenRunNodes: -> run_id, node, started_at, lease_expires_at (0 when none) of the
	// unfinished nodes of every night, by run_id, node.
	OpenRunNodes string
	// FinishDeadRunNode: finished_at, run id, node; finishes an unfinished node's part as
	// died.
	FinishDeadRunNode string
	// RecentRunNodes: node, limit -> died, finished_at (0 while unfinished) of the node's
	// latest parts in nights, newest first.
	RecentRunNodes string
	// InFlight: node ('' for every node), since -> id, state of the tickets whose attempt
	// ran on node when it died: running there, or rescued from there (rescued_node) and
	// updated since.
	InFlight string
	// ExpireLeases: now, node ('' for every node); ends now the unexpired leases of the
	// running tickets on node (their process is dead), so the next claim rescues them.
	ExpireLeases string
	// AddCrash (transition): updated_at, id; crashes+1. EscalateCrashed (transition):
	// EscalateCrashedParams; a running or queued ticket to escalated, its lease
	// ended and its fence token moved on.
	AddCrash, EscalateCrashed string
	// ClearIntakeSkips: source. InsertIntakeSkip: InsertIntakeSkipParams. IntakeSkips: ->
	// source, path, reason, at, by source, path.
	ClearIntakeSkips, InsertIntakeSkip, IntakeSkips string
	// RecordEnvironment: RecordEnvironmentParams; replaces the row of (repo, node).
	// Environments: -> repo, node, env_key, ok, cached, built_at, took_ms, at, error, output, by repo, node.
	RecordEnvironment, Environments string

	// Dup: duplicates at intake (DupSQL).
	Dup DupSQL
	// Round: rounds on done tickets (RoundSQL).
	Round RoundSQL
	// Console: dismissals and digests (ConsoleSQL).
	Console ConsoleSQL
	// Overlap: overlap-aware claiming (OverlapSQL).
	Overlap OverlapSQL
}

// TicketColumns are the ticket columns every statement returns, in this order: id,
// source, external_id, repo, title, body, labels, priority, state, attempts,
// max_attempts, run_after, lease_owner, lease_expires_at, fence_token, cancel_requested,
// branch, result_dir, summary, reason, triage, created_at, updated_at, finished_at,
// rescued_from (” for none), pruned_at, rescues, lease_node, question, questions,
// attempts_before, crashes.
const TicketColumns = 32

// ListSpec narrows SQL.List; zero fields do not filter. States are known state names.
type ListSpec struct {
	States []string
	Repo   string
	Since  int64 // created_at >= Since (unix ms)
	// BeforeID keeps ids below it (a keyset page of the newest-first list).
	BeforeID int64
	Limit    int
}

// Table is one table as a copy between engines reads and writes it: Select reads every row
// (its columns in Columns' order, by primary key), Insert writes one row of them.
type Table struct {
	Name           string
	Columns        []string
	Select, Insert string
}
