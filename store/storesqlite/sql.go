package storesqlite

import (
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/store/storedriver"
)

// ticketCols are storedriver.TicketColumns in SQLite.
const ticketCols = `id, source, external_id, repo, title, body, labels, priority, state, attempts,
	max_attempts, run_after, lease_owner, lease_expires_at, fence_token, cancel_requested,
	branch, result_dir, summary, reason, triage, created_at, updated_at, finished_at,
	coalesce(rescued_from, ''), pruned_at, rescues, lease_node, question, questions, attempts_before, crashes, budget_extra_usd`

// reserveEvent is the SET fragment of a transition UPDATE that reserves its event's id: the
// ticket's head moves to one past the newest event of any ticket (the single writer makes
// that unique) and the old head is kept in prev_event_id. A head that does not exist (a
// reservation whose event was never written) reserves nothing (NULL), and the append then
// refuses to write. Folding the reservation into the transition's own UPDATE is what makes
// an event cheap: the v10 trigger that moved the head after each insert rewrote the ticket
// row a second time (dropping it took a one-worker queue cycle from 672k to about 630k
// instructions).
const reserveEvent = `prev_event_id = last_event_id, last_event_id = CASE
	WHEN last_event_id IS NULL OR EXISTS (SELECT 1 FROM events e WHERE e.id = tickets.last_event_id)
	THEN (SELECT coalesce(max(id), 0) + 1 FROM events) END`

// appendQuery writes the reserved event of ticket ?1; attemptActor are its attempt and
// actor. It reads no events: an INSERT that reads its own table first copies the rows into
// a temporary b-tree.
func appendQuery(attemptActor string) string {
	return `INSERT INTO events (id, ticket_id, at, kind, from_state, to_state, reason, attempt, actor, prev_id)
		SELECT last_event_id, id, ?2, ?3, ?4, ?5, ?6, ` + attemptActor + `, prev_event_id FROM tickets
		WHERE id = ?1 AND last_event_id IS NOT NULL`
}

// statements are SQLite's storedriver.SQL.
var statements = storedriver.SQL{
	Enqueue: `INSERT INTO tickets
			(source, external_id, repo, title, body, labels, priority, max_attempts, run_after, created_at, updated_at, last_event_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(id), 0) + 1 FROM events))
			ON CONFLICT (source, external_id) DO NOTHING`,
	TicketBySource: `SELECT id FROM tickets WHERE source = ? AND external_id = ?`,
	SameText:       `SELECT id FROM tickets WHERE source = ? AND repo = ? AND title = ? AND body = ? ORDER BY id LIMIT 1`,
	Retext: `UPDATE tickets SET repo = ?, title = ?, body = ?, labels = ?, priority = ?, updated_at = ?
			WHERE id = ? AND state = 'queued' AND fence_token = 0`,
	GetTicket:    `SELECT ` + ticketCols + ` FROM tickets WHERE id = ?`,
	TicketExists: `SELECT 1 FROM tickets WHERE id = ?`,
	CurrentState: `SELECT state, attempts FROM tickets WHERE id = ?`,
	List:         listQuery,

	Settle: `UPDATE tickets SET
			state = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE 'escalated' END,
			reason = CASE WHEN cancel_requested = 1
				THEN 'cancel requested; lease of ' || lease_owner || ' expired'
				ELSE 'lease of ' || lease_owner || ' expired: ' || (rescues + 1) || ' lost leases reach the limit of ' || ?2 ||
					' (the ticket may be crashing its worker; see its events and the daemon log)' END,
			rescues = rescues + 1, lease_expires_at = NULL, finished_at = ?1, updated_at = ?1
		WHERE finished_at IS NULL AND state = 'running' AND lease_expires_at <= ?1
			AND (rescues + 1 >= ?2 OR cancel_requested = 1)
		RETURNING id, state, attempts, reason`,
	Heartbeat: `UPDATE tickets SET lease_expires_at = ?, updated_at = ?
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
	CancelRequested: `SELECT cancel_requested FROM tickets WHERE id = ?`,
	Leased: `SELECT attempts, max_attempts + attempts_before, cancel_requested, lease_owner FROM tickets
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
	Complete: `UPDATE tickets SET state = 'done', lease_expires_at = NULL,
				finished_at = ?, updated_at = ?, branch = ?, result_dir = ?, summary = ?, reason = '', ` + reserveEvent + `
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
	EndAttempt: `UPDATE tickets SET state = ?1, attempts = ?2, run_after = ?3,
				lease_expires_at = NULL, finished_at = ?4, updated_at = ?5, reason = ?6,
				branch = CASE WHEN ?7 != '' THEN ?7 ELSE branch END,
				result_dir = CASE WHEN ?8 != '' THEN ?8 ELSE result_dir END, ` + reserveEvent + `
			WHERE id = ?9 AND fence_token = ?10 AND state = 'running'`,
	FinishCancelled: `UPDATE tickets SET state = 'cancelled', lease_expires_at = NULL,
				finished_at = ?, updated_at = ?, reason = ?, ` + reserveEvent + `
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
	SaveTriage: `UPDATE tickets SET triage = ?, updated_at = ?
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
	CancelQueued: `UPDATE tickets SET state = 'cancelled', finished_at = ?, updated_at = ?, reason = ?,
				question = '', ` + reserveEvent + ` WHERE id = ? AND state = ?`,
	RequeueParked: `UPDATE tickets SET state = 'queued', run_after = ?, updated_at = ?, reason = ?, ` + reserveEvent + `
				WHERE id = ? AND state = 'parked'`,
	ParkedDue: `SELECT id, attempts FROM tickets
			WHERE finished_at IS NULL AND state = 'parked' AND run_after <= ?`,
	Unpark: `UPDATE tickets SET state = 'queued', run_after = ?, updated_at = ?, ` + reserveEvent + `
				WHERE id = ? AND state = 'parked'`,
	FlagCancel: `UPDATE tickets SET cancel_requested = 1, updated_at = ?, reason = ?,
				` + reserveEvent + ` WHERE id = ? AND state = 'running'`,
	Accept: `UPDATE tickets SET state = 'done', finished_at = ?, updated_at = ?, branch = ?, result_dir = ?,
				reason = ?, ` + reserveEvent + ` WHERE id = ? AND state = 'escalated'`,
	Requeue: `UPDATE tickets SET state = 'queued', attempts_before = attempts, crashes = 0, run_after = ?,
				fence_token = fence_token + 1, lease_expires_at = NULL, cancel_requested = 0,
				finished_at = NULL, updated_at = ?, reason = ?, question = '', ` + reserveEvent + `
			WHERE id = ? AND state = ?`,

	AskHuman: `UPDATE tickets SET state = 'needs_info', attempts = ?1, lease_expires_at = NULL,
				updated_at = ?2, reason = ?3, question = ?4, questions = questions + 1,
				branch = CASE WHEN ?5 != '' THEN ?5 ELSE branch END,
				result_dir = CASE WHEN ?6 != '' THEN ?6 ELSE result_dir END, ` + reserveEvent + `
			WHERE id = ?7 AND fence_token = ?8 AND state = 'running'`,
	NeedBudget: `UPDATE tickets SET state = 'needs_budget', attempts = ?1, lease_expires_at = NULL,
				updated_at = ?2, reason = ?3,
				branch = CASE WHEN ?4 != '' THEN ?4 ELSE branch END,
				result_dir = CASE WHEN ?5 != '' THEN ?5 ELSE result_dir END, ` + reserveEvent + `
			WHERE id = ?6 AND fence_token = ?7 AND state = 'running'`,
	AddBudget: `UPDATE tickets SET state = 'queued', run_after = ?1, updated_at = ?2, reason = ?3,
				budget_extra_usd = budget_extra_usd + ?4, ` + reserveEvent + `
			WHERE id = ?5 AND state = 'needs_budget'`,
	InsertQuestion: `INSERT INTO questions (ticket_id, n, attempt, question, asked_at)
			SELECT id, questions, ?1, ?2, ?3 FROM tickets WHERE id = ?4`,
	AnswerQuestion: `UPDATE questions SET answer = ?1, answered_by = ?2, answered_at = ?3
			WHERE ticket_id = ?4 AND answer IS NULL AND n = (SELECT questions FROM tickets WHERE id = ?4)`,
	Answered: `UPDATE tickets SET state = 'queued', run_after = ?, updated_at = ?, question = '', reason = ?, ` + reserveEvent + `
			WHERE id = ? AND state = 'needs_info'`,
	RequeueNeedsInfo: `UPDATE tickets SET state = 'queued', run_after = ?, updated_at = ?, reason = ?, question = '', ` + reserveEvent + `
			WHERE id = ? AND state = 'needs_info'`,
	Questions: `SELECT ticket_id, n, attempt, question, asked_at, answer, answered_by, answered_at, comment_url
		FROM questions WHERE ticket_id = ? ORDER BY n`,
	SetQuestionComment: `UPDATE questions SET comment_url = ? WHERE ticket_id = ? AND n = ?`,
	WaitingForAnswer: func(limited bool) string {
		q := `SELECT ` + prefixCols("t.", ticketCols) + `, q.n, q.attempt, q.question, q.asked_at, q.comment_url
		FROM tickets t INDEXED BY tickets_open JOIN questions q ON q.ticket_id = t.id AND q.n = t.questions
		WHERE t.finished_at IS NULL AND t.state = 'needs_info' AND (?1 = '' OR t.source = ?1)
		ORDER BY q.asked_at, t.id`
		if limited {
			q += ` LIMIT ?2`
		}
		return q
	},

	ReserveEvent:       `UPDATE tickets SET ` + reserveEvent + ` WHERE id = ?`,
	AppendEvent:        appendQuery(`?7, ?8`),
	AppendEventFromRow: appendQuery(`attempts, lease_owner`),
	Events: `WITH RECURSIVE chain(id) AS (
			SELECT last_event_id FROM tickets WHERE id = ?1
			UNION ALL
			SELECT e.prev_id FROM chain CROSS JOIN events e ON e.id = chain.id WHERE e.prev_id IS NOT NULL)
		SELECT e.id, e.ticket_id, e.at, e.kind, e.from_state, e.to_state, e.attempt, e.actor, e.reason
		FROM chain CROSS JOIN events e ON e.id = chain.id ORDER BY e.id`,
	// The ticket's event chain, newest first, walked back only as far as the run's start.
	TransportReleases: `WITH RECURSIVE
			since(id) AS (SELECT after_event_id FROM runs WHERE id = ?2),
			chain(id) AS (
				SELECT last_event_id FROM tickets WHERE id = ?1 AND last_event_id > (SELECT id FROM since)
				UNION ALL
				SELECT e.prev_id FROM chain CROSS JOIN events e ON e.id = chain.id WHERE e.prev_id > (SELECT id FROM since))
		SELECT count(*) FROM chain CROSS JOIN events e ON e.id = chain.id
		WHERE e.kind = 'released' AND e.reason LIKE 'transport:%'`,

	InsertModelCall: `INSERT INTO model_calls (ticket_id, run_id, attempt, role, model, endpoint,
				prompt_tokens, cached_tokens, cache_write_tokens, completion_tokens, reasoning_tokens, cost_usd,
				latency_ms, finish_reason, error_class, error, retries, started_at,
				usage_reported, cost_source, price_cost_usd, provider_cost_usd, compactions, completion_unknown, continuations)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	ModelCalls: `SELECT id, ticket_id, coalesce(run_id, 0), attempt, role, model, endpoint,
			prompt_tokens, cached_tokens, cache_write_tokens, completion_tokens, reasoning_tokens, cost_usd,
			latency_ms, finish_reason, error_class, error, retries, started_at,
			usage_reported, cost_source, price_cost_usd, provider_cost_usd, compactions, completion_unknown, continuations
		FROM model_calls WHERE ticket_id = ? ORDER BY id`,
	InsertToolCall: `INSERT INTO tool_calls (ticket_id, attempt, step, tool, args, result, ok, duration_ms, at, rung)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	ToolCalls: `SELECT id, ticket_id, attempt, step, tool, args, result, ok, duration_ms, at, rung
		FROM tool_calls WHERE ticket_id = ? ORDER BY id`,
	InsertReview: `INSERT INTO reviews (ticket_id, attempt, round, kept, dropped, at, reviewer) VALUES (?, ?, ?, ?, ?, ?, ?)`,
	Reviews: `SELECT ticket_id, attempt, round, kept, dropped, at, reviewer FROM reviews
		WHERE ticket_id = ? ORDER BY id`,
	InsertEndpointEvent: `INSERT INTO endpoint_events (run_id, endpoint, base_url, down, since, at, last_error)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
	EndpointEvents:    `SELECT id, coalesce(run_id, 0), endpoint, base_url, down, since, at, last_error FROM endpoint_events ORDER BY id`,
	EndpointEventsRun: `SELECT id, coalesce(run_id, 0), endpoint, base_url, down, since, at, last_error FROM endpoint_events WHERE run_id = ? ORDER BY id`,
	RecordOutput: `INSERT INTO outputs (ticket_id, kind, url, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (ticket_id, kind) DO NOTHING`,
	Unpublished: `SELECT ` + ticketCols + ` FROM tickets
		WHERE source = ? AND state = ? AND NOT EXISTS (
			SELECT 1 FROM outputs o WHERE o.ticket_id = tickets.id AND o.kind = ?)
		ORDER BY finished_at, id LIMIT ?`,
	Outputs: `SELECT ticket_id, kind, url, created_at FROM outputs WHERE ticket_id = ? ORDER BY created_at`,

	StartRun:      `INSERT INTO runs (trigger, started_at, after_event_id) VALUES (?, ?, (SELECT coalesce(max(id), 0) FROM events))`,
	SetRunSandbox: `UPDATE runs SET sandbox = ? WHERE id = ?`,
	RunWindow:     `SELECT after_event_id, ended_at FROM runs WHERE id = ?`,
	RunEnding: `SELECT after_event_id, outcome, error, (SELECT count(*) FROM run_nodes n WHERE n.run_id = runs.id)
		FROM runs WHERE id = ?`,
	FinishRun: `UPDATE runs SET ended_at = ?1, outcome = ?4, error = ?5,
			worked    = (SELECT count(DISTINCT ticket_id) FROM events WHERE id > ?2 AND at <= ?1 AND kind = 'claimed'),
			claimed   = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND kind = 'claimed'),
			done      = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND to_state = 'done' AND from_state <> 'done'),
			escalated = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND to_state = 'escalated' AND from_state <> 'escalated'),
			retried   = (SELECT count(*) FROM events WHERE id > ?2 AND at <= ?1 AND kind = 'retry'),
			cost_usd  = (SELECT coalesce(sum(cost_usd), 0) FROM model_calls WHERE run_id = ?3)
			WHERE id = ?3`,
	Runs: `SELECT id, trigger, sandbox, started_at, ended_at, outcome, error, worked,
			claimed, done, escalated, retried, cost_usd
		FROM runs ORDER BY id DESC LIMIT ?`,
	NightTotals: `SELECT outcome, count(*), max(ended_at) FROM runs
		WHERE outcome != '' AND ended_at IS NOT NULL GROUP BY outcome`,
	UsageEstimates:    usageEstimates,
	UsageEstimatesRun: usageEstimates + ` WHERE run_id = ?`,
	JoinRunNode: `INSERT INTO run_nodes (run_id, node, started_at) VALUES (?, ?, ?)
			ON CONFLICT (run_id, node) DO UPDATE SET finished_at = NULL, died = 0, lease_expires_at = NULL`,
	FinishRunNode: `UPDATE run_nodes SET finished_at = ? WHERE run_id = ? AND node = ?`,
	OpenRun: `SELECT id FROM runs WHERE started_at >= ?
			AND EXISTS (SELECT 1 FROM run_nodes n WHERE n.run_id = runs.id AND n.finished_at IS NULL)
		ORDER BY id DESC LIMIT 1`,
	RunNodes: `SELECT node, started_at, finished_at FROM run_nodes WHERE run_id = ? ORDER BY started_at, node`,
	RunCost: `SELECT coalesce(sum(cost_usd), 0), coalesce(sum(CASE WHEN cost_source = 'estimate' THEN cost_usd END), 0)
		FROM model_calls WHERE run_id = ?`,

	SaveArtifact: `INSERT INTO artifacts (ticket_id, path, content, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (ticket_id, path) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at`,
	Artifacts: `SELECT path, length(content), updated_at FROM artifacts WHERE ticket_id = ? ORDER BY path`,
	Artifact:  `SELECT content FROM artifacts WHERE ticket_id = ? AND path = ?`,
	GCArtifacts: `DELETE FROM artifacts WHERE path != 'report.md' AND ticket_id IN
			(SELECT id FROM tickets WHERE finished_at IS NOT NULL AND finished_at < ? AND pruned_at IS NULL)`,

	LoadBaseline: `UPDATE baselines SET used_at = ?, uses = uses + 1
			WHERE repo = ? AND base_commit = ? AND checks_hash = ?
			RETURNING results, flaky, duration_ms, created_at, used_at, uses`,
	SaveBaseline: `INSERT INTO baselines (repo, base_commit, checks_hash, results, flaky, duration_ms, created_at, used_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (repo, base_commit, checks_hash) DO UPDATE SET
				results = excluded.results, flaky = excluded.flaky, duration_ms = excluded.duration_ms,
				created_at = excluded.created_at, used_at = excluded.used_at, uses = 0`,
	PruneBaselines: `DELETE FROM baselines WHERE used_at < ?`,

	Due: `SELECT state, 0, count(*), min(run_after), min(lease_expires_at), sum(run_after <= ?1) FROM tickets
		WHERE finished_at IS NULL GROUP BY state`,
	// With repositories paused, each active ticket's row is read for its repo: the active
	// set is small, the history is not touched.
	DuePaused: `SELECT state, repo IN (SELECT value FROM json_each(?1)), count(*), min(run_after), min(lease_expires_at),
			sum(run_after <= ?2)
		FROM tickets WHERE finished_at IS NULL GROUP BY 1, 2`,
	CountByState: `SELECT state, count(*) FROM tickets GROUP BY state`,
	EventKinds:   `SELECT kind, count(*), sum(kind = 'lease_expired' AND to_state = 'queued') FROM events GROUP BY kind`,
	EventsByRepo: `SELECT t.repo, count(*) FROM events e JOIN tickets t ON t.id = e.ticket_id WHERE e.kind = ?1 GROUP BY t.repo ORDER BY t.repo`,
	CallTotals: `SELECT role, model, count(*), sum(error != ''), sum(prompt_tokens), sum(cached_tokens),
			sum(completion_tokens), sum(reasoning_tokens), coalesce(sum(cost_usd), 0), sum(latency_ms)
		FROM model_calls GROUP BY role, model ORDER BY role, model`,
	ToolTotals: toolTotals,
	NightTokens: func(n int) string {
		return nightTokensQuery(strings.TrimSuffix(strings.Repeat("?, ", n), ", "))
	},
	Progress: `SELECT t.attempts,
			coalesce((SELECT step FROM tool_calls WHERE ticket_id = t.id AND attempt = t.attempts ORDER BY id DESC LIMIT 1), 0),
			coalesce((SELECT tool FROM tool_calls WHERE ticket_id = t.id AND attempt = t.attempts ORDER BY id DESC LIMIT 1), ''),
			(SELECT max(at) FROM tool_calls WHERE ticket_id = t.id AND attempt = t.attempts),
			(SELECT count(*) FROM model_calls WHERE ticket_id = t.id AND attempt = t.attempts),
			(SELECT max(started_at) FROM model_calls WHERE ticket_id = t.id AND attempt = t.attempts)
		FROM tickets t WHERE t.id = ?`,
	StatsTickets: func(run bool) string {
		return `SELECT state, attempts FROM tickets WHERE id IN (` + ticketScope(run) + `)`
	},
	TicketDurations: func(run bool) string {
		scope := ``
		if run {
			scope = ` AND id > ?1 AND at <= ?2`
		}
		return `SELECT c.ticket_id, c.first, t.finished_at
		FROM (SELECT ticket_id, min(at) AS first FROM events WHERE kind = 'claimed'` + scope + ` GROUP BY ticket_id) c
		JOIN tickets t ON t.id = c.ticket_id`
	},
	StatsCalls: func(run bool) string {
		return `SELECT count(*), coalesce(sum(cost_usd), 0), coalesce(max(cost_usd IS NULL OR completion_unknown = 1), 0),
			coalesce(sum(prompt_tokens), 0), coalesce(sum(cached_tokens), 0), coalesce(sum(completion_tokens), 0)
		FROM model_calls WHERE id IN (` + callScope(run) + `)`
	},
	StatsFirstRequests: func(run bool) string {
		return `SELECT role, sum(cached_tokens), sum(prompt_tokens) FROM model_calls
		WHERE id IN (SELECT min(id) FROM model_calls WHERE id IN (` + callScope(run) + `) GROUP BY ticket_id, role)
		GROUP BY role`
	},
	StatsReviews: func(run bool) string {
		q := `SELECT count(*), coalesce(sum(dropped), 0) FROM reviews WHERE ticket_id IN (` + ticketScope(run) + `)`
		if run {
			q += ` AND at >= (SELECT started_at FROM runs WHERE id = ?3) AND at <= ?2`
		}
		return q
	},

	FinishedBefore: `SELECT ` + ticketCols + ` FROM tickets
		WHERE finished_at IS NOT NULL AND finished_at < ? ORDER BY finished_at, id`,

	Tables:    tables(),
	AfterCopy: `SELECT 1`,

	GCToolCalls: `UPDATE tool_calls SET args = '', result = ''
			WHERE ticket_id IN (SELECT id FROM tickets WHERE finished_at IS NOT NULL AND finished_at < ? AND pruned_at IS NULL)`,
	GCTickets: `UPDATE tickets SET body = '', triage = '', summary = '', pruned_at = ?
			WHERE finished_at IS NOT NULL AND finished_at < ? AND pruned_at IS NULL`,

	InsertRequeue: `INSERT INTO requeues (ticket_id, n, at, actor, from_state, attempts, note, branch)
			SELECT ?1, coalesce(max(n), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7 FROM requeues WHERE ticket_id = ?1`,
	Requeues:     `SELECT n, at, actor, from_state, attempts, note, branch FROM requeues WHERE ticket_id = ? ORDER BY n`,
	KeptBranches: `SELECT ticket_id, branch FROM requeues WHERE branch != '' UNION SELECT ticket_id, branch FROM rounds WHERE branch != ''`,
	Identity:     `SELECT value FROM store_meta WHERE key = 'identity'`,
	BeatRunNode:  `UPDATE run_nodes SET lease_expires_at = ? WHERE run_id = ? AND node = ? AND finished_at IS NULL`,
	OpenRunNodes: `SELECT run_id, node, started_at, coalesce(lease_expires_at, 0) FROM run_nodes
			WHERE finished_at IS NULL ORDER BY run_id, node`,
	FinishDeadRunNode: `UPDATE run_nodes SET finished_at = ?, died = 1 WHERE run_id = ? AND node = ? AND finished_at IS NULL`,
	RecentRunNodes:    `SELECT died, coalesce(finished_at, 0) FROM run_nodes WHERE node = ? ORDER BY started_at DESC, run_id DESC LIMIT ?`,
	InFlight: `SELECT id, state FROM tickets
			WHERE (state = 'running' AND (?1 = '' OR lease_node = ?1))
				OR (?1 != '' AND rescued_node = ?1 AND updated_at >= ?2)
			ORDER BY id`,
	ExpireLeases: `UPDATE tickets SET lease_expires_at = ?1
			WHERE finished_at IS NULL AND state = 'running' AND lease_expires_at > ?1 AND (?2 = '' OR lease_node = ?2)`,
	AddCrash: `UPDATE tickets SET crashes = crashes + 1, updated_at = ?, ` + reserveEvent + ` WHERE id = ?`,
	EscalateCrashed: `UPDATE tickets SET state = 'escalated', lease_expires_at = NULL, fence_token = fence_token + 1,
				finished_at = ?, updated_at = ?, reason = ?, ` + reserveEvent + `
			WHERE id = ? AND state IN ('running', 'queued')`,
	ClearIntakeSkips: `DELETE FROM intake_skips WHERE source = ?`,
	InsertIntakeSkip: `INSERT INTO intake_skips (source, path, reason, at) VALUES (?, ?, ?, ?)
			ON CONFLICT (source, path) DO UPDATE SET reason = excluded.reason, at = excluded.at`,
	IntakeSkips: `SELECT source, path, reason, at FROM intake_skips ORDER BY source, path`,
	RecordEnvironment: `INSERT INTO environments (repo, node, env_key, ok, cached, built_at, took_ms, at, error, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (repo, node) DO UPDATE SET env_key = excluded.env_key, ok = excluded.ok, cached = excluded.cached, built_at = excluded.built_at, took_ms = excluded.took_ms, at = excluded.at, error = excluded.error, output = excluded.output`,
	Environments: `SELECT repo, node, env_key, ok, cached, built_at, took_ms, at, error, output FROM environments ORDER BY repo, node`,
	Dup:          dupStatements,
	Round:        roundStatements,
	Console:      consoleStatements,
	Overlap:      overlapStatements,
}

const usageEstimates = `SELECT count(*), coalesce(sum(usage_reported = 0), 0), coalesce(sum(cost_usd IS NULL OR completion_unknown = 1), 0),
			coalesce(sum(CASE WHEN cost_source = 'estimate' THEN cost_usd END), 0),
			coalesce(sum(CASE WHEN cost_source = 'provider' THEN cost_usd END), 0)
		FROM model_calls`

// ticketScope and callScope are the tickets and model calls Stats counts: all of them, or a
// run's (args ?1 after_event_id, ?2 end, ?3 run id). UNION ALL: the IN list needs no
// de-duplication, and a plain UNION makes SQLite walk events in ticket order (the whole
// table) instead of the run's rowid range.
func ticketScope(run bool) string {
	if !run {
		return `SELECT id FROM tickets`
	}
	return `SELECT ticket_id FROM events WHERE kind = 'claimed' AND id > ?1 AND at <= ?2
			UNION ALL SELECT ticket_id FROM model_calls WHERE run_id = ?3`
}

func callScope(run bool) string {
	if !run {
		return `SELECT id FROM model_calls`
	}
	return `SELECT id FROM model_calls WHERE run_id = ?3`
}

func toolTotals(bucketsMS []int64) string {
	q := `SELECT tool, count(*), sum(ok = 0), sum(duration_ms)`
	for _, b := range bucketsMS {
		q += fmt.Sprintf(", sum(duration_ms <= %d)", b)
	}
	return q + ` FROM tool_calls GROUP BY tool ORDER BY tool`
}

// listQuery builds List's statement. States are written as literals, never bound: SQLite
// matches a partial index only against literal terms. Its cost grows with the tickets it
// returns, not with the history: a state filter inside {queued, running} walks the
// open-tickets index, and the totals aggregate only the listed tickets' calls through
// model_calls_ticket.
func listQuery(f storedriver.ListSpec) (string, []any) {
	var (
		where []string
		args  []any
	)
	open := false // only unfinished states: the rows come from tickets_open
	if len(f.States) > 0 {
		lits := make([]string, len(f.States))
		active := true
		for i, st := range f.States {
			lits[i] = "'" + strings.ReplaceAll(st, "'", "''") + "'"
			active = active && (st == "queued" || st == "running" || st == "parked" || st == "needs_info" || st == "needs_budget")
		}
		if active {
			where = append(where, "finished_at IS NULL") // the tickets_open term, verbatim
			open = true
		}
		where = append(where, "state IN ("+strings.Join(lits, ", ")+")")
	}
	if f.Repo != "" {
		where = append(where, "repo = ?")
		args = append(args, f.Repo)
	}
	if f.Since != 0 {
		where = append(where, "created_at >= ?")
		args = append(args, f.Since)
	}
	if f.BeforeID > 0 {
		where = append(where, "id < ?")
		args = append(args, f.BeforeID)
	}
	ids := "SELECT id FROM tickets"
	if open {
		// Without statistics the planner would rather walk the rowid order of the whole
		// table, the history included, than sort the few open tickets.
		ids += " INDEXED BY tickets_open"
	}
	if len(where) > 0 {
		ids += " WHERE " + strings.Join(where, " AND ")
	}
	ids += " ORDER BY id DESC"
	if f.Limit > 0 {
		ids += " LIMIT ?"
		args = append(args, f.Limit)
	}
	q := `WITH ids AS MATERIALIZED (` + ids + `),
		m AS (SELECT ticket_id, count(*) AS n, sum(prompt_tokens) AS p, sum(cached_tokens) AS c,
				sum(completion_tokens) AS o, sum(cost_usd) AS cost,
				max(cost_usd IS NULL OR completion_unknown = 1) AS unknown, max(usage_reported = 0) AS estimated
			FROM model_calls WHERE ticket_id IN (SELECT id FROM ids) GROUP BY ticket_id)
		SELECT ` + prefixCols("t.", ticketCols) + `,
			coalesce(m.n, 0), coalesce(m.p, 0), coalesce(m.c, 0), coalesce(m.o, 0), coalesce(m.cost, 0), coalesce(m.unknown, 0),
			coalesce(m.estimated, 0)
		FROM tickets t LEFT JOIN m ON m.ticket_id = t.id
		WHERE t.id IN (SELECT id FROM ids) ORDER BY t.id DESC`
	return q, args
}

// prefixCols qualifies each column of a ticketCols-style list with prefix.
func prefixCols(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if strings.HasPrefix(p, "coalesce(") {
			p = "coalesce(" + prefix + strings.TrimPrefix(p, "coalesce(")
		} else if strings.HasPrefix(p, "'") {
			// literal, part of a coalesce above
		} else {
			p = prefix + p
		}
		parts[i] = p
	}
	return strings.Join(parts, ", ")
}

// tables are storedriver.SchemaTables as this engine copies them.
func tables() []storedriver.Table {
	var out []storedriver.Table
	for _, t := range storedriver.SchemaTables {
		marks := make([]string, len(t.Columns))
		for i := range marks {
			marks[i] = "?"
		}
		cols := strings.Join(t.Columns, ", ")
		out = append(out, storedriver.Table{Name: t.Name, Columns: t.Columns,
			Select: "SELECT " + cols + " FROM " + t.Name + " ORDER BY " + t.OrderBy,
			Insert: "INSERT INTO " + t.Name + " (" + cols + ") VALUES (" + strings.Join(marks, ", ") + ")" + replaceOnCopy(t.Name, t.Columns)})
	}
	return out
}

// nightTokensQuery sums the model calls of the runs whose ids the placeholders marks name
// (through model_calls_run).
func nightTokensQuery(marks string) string {
	return `SELECT run_id, count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(cached_tokens), 0),
			coalesce(sum(completion_tokens), 0)
		FROM model_calls WHERE run_id IN (` + marks + `) GROUP BY run_id`
}

// replaceOnCopy is the ON CONFLICT clause of a table whose target rows a copy replaces
// (storedriver.ReplacedOnCopy), "" for the others.
func replaceOnCopy(table string, cols []string) string {
	key, ok := storedriver.ReplacedOnCopy[table]
	if !ok {
		return ""
	}
	var set []string
	for _, c := range cols {
		if c != key {
			set = append(set, c+" = excluded."+c)
		}
	}
	return " ON CONFLICT (" + key + ") DO UPDATE SET " + strings.Join(set, ", ")
}
