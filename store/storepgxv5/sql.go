package storepgxv5

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/store/storedriver"
)

// ticketCols are storedriver.TicketColumns in PostgreSQL.
const ticketCols = `id, source, external_id, repo, title, body, labels, priority, state, attempts,
	max_attempts, run_after, lease_owner, lease_expires_at, fence_token, cancel_requested,
	branch, result_dir, summary, reason, triage, created_at, updated_at, finished_at,
	coalesce(rescued_from, ''), pruned_at, rescues, lease_node, question, questions, attempts_before, crashes, budget_extra_usd`

// reserveEvent is the SET fragment of a transition UPDATE that reserves its event's id from
// events_id_seq, keeping the old head in prev_event_id. Unlike SQLite's it need not check
// that the old head was written: the deferred trigger tickets_head_written (v26) refuses
// to commit a head whose event was never written, checked against the latest committed
// rows (a subquery here would see only the statement's snapshot, and refuse a head a
// concurrent transaction wrote).
const reserveEvent = `prev_event_id = last_event_id, last_event_id = nextval('events_id_seq')`

// claimPick is the claim's pick: the first open ticket in claim order (priority DESC, id:
// among the due, the oldest enqueued first, as tickets_open walks) that is queued and due,
// or (rescue) running on an expired lease that may be rescued, skipping the rows other
// transactions hold ($1 now, $2 max rescues, $10 the paused repositories as a JSON array,
// $11 the tickets to pass over as one: storedriver.ClaimParams.Avoid).
func claimPick(paused, avoid, rescue bool) string {
	filter := ""
	if paused {
		filter = ` AND repo NOT IN (SELECT json_array_elements_text($10::text::json))`
	}
	if avoid {
		filter += ` AND id NOT IN (SELECT json_array_elements_text($11::text::json)::bigint)`
	}
	running := ""
	if rescue {
		running = `
			OR (state = 'running' AND lease_expires_at <= $1::bigint AND rescues + 1 < $2::int AND cancel_requested = 0)`
	}
	return `SELECT id FROM tickets
		WHERE finished_at IS NULL AND (
			(state = 'queued' AND run_after <= $1::bigint)` + running + `)` + filter + `
		ORDER BY priority DESC, id
		LIMIT 1 FOR UPDATE SKIP LOCKED`
}

// claimLease leases the picked ticket to worker $3 on node $4 until $5 and writes a fresh
// claim's event ($6 kind, $7 from, $8 to, $9 reason) under the lease's reservation: one
// statement, so the row stays locked from the pick to the lease, and a claim costs one
// round trip. A rescue does not charge the attempt its expired lease cut short: attempts
// stay, rescues grows, and its events are the store's to write. $2 is bound but unused
// without rescue: it is typed for the planner.
func claimLease(paused, avoid, rescue, unpredicted bool) string {
	only := ""
	if unpredicted {
		only = ` AND NOT t.predicted`
	}
	return `WITH pick AS (` + claimPick(paused, avoid, rescue) + `),
	leased AS (
		UPDATE tickets t SET state = 'running', attempts = t.attempts + (t.state = 'queued')::int,
			rescues = t.rescues + (t.state = 'running')::int,
			fence_token = t.fence_token + 1, lease_owner = $3, lease_node = $4, lease_expires_at = $5, updated_at = $1,
			rescued_from = CASE WHEN t.state = 'running' THEN t.lease_owner END,
			rescued_node = CASE WHEN t.state = 'running' THEN t.lease_node ELSE '' END,
			prev_event_id = t.last_event_id, last_event_id = nextval('events_id_seq')
		FROM pick WHERE t.id = pick.id` + only + `
		RETURNING t.*),
	claimed AS (
		INSERT INTO events (id, ticket_id, at, kind, from_state, to_state, reason, attempt, actor, prev_id)
		SELECT last_event_id, id, $1, $6, $7, $8, $9, attempts, lease_owner, prev_event_id FROM leased
		WHERE coalesce(rescued_from, '') = '' AND $2::int IS NOT NULL)
	SELECT ` + ticketCols + ` FROM leased`
}

// claimBatch is claimLease for several workers ($3 their names as a text array), queued
// tickets only, up to the first with predicted files (storedriver.BatchClaimer).
func claimBatch(paused bool) string {
	return claimBatchWith(paused, `cardinality($3::text[])`, `($3::text[])[cut.n]`)
}

// claimBatchWith is claimBatch leasing at most limit tickets, the n-th (cut.n) to owner.
func claimBatchWith(paused bool, limit, owner string) string {
	filter := ""
	if paused {
		filter = ` AND repo NOT IN (SELECT json_array_elements_text($10::text::json))`
	}
	return `WITH pick AS (
		SELECT id, priority, predicted FROM tickets
		WHERE finished_at IS NULL AND state = 'queued' AND run_after <= $1::bigint` + filter + `
		ORDER BY priority DESC, id
		LIMIT ` + limit + ` FOR UPDATE SKIP LOCKED),
	numbered AS (
		SELECT id, row_number() OVER (ORDER BY priority DESC, id) AS n, predicted
		FROM pick),
	cut AS (
		SELECT id, n FROM numbered
		WHERE n < coalesce((SELECT min(n) FROM numbered WHERE predicted), 2147483647)),
	leased AS (
		UPDATE tickets t SET state = 'running', attempts = t.attempts + 1,
			fence_token = t.fence_token + 1, lease_owner = ` + owner + `, lease_node = $4,
			lease_expires_at = $5, updated_at = $1, rescued_from = NULL, rescued_node = '',
			prev_event_id = t.last_event_id, last_event_id = nextval('events_id_seq')
		FROM cut WHERE t.id = cut.id
		RETURNING t.*),
	claimed AS (
		INSERT INTO events (id, ticket_id, at, kind, from_state, to_state, reason, attempt, actor, prev_id)
		SELECT last_event_id, id, $1, $6, $7, $8, $9, attempts, lease_owner, prev_event_id FROM leased
		WHERE $2::int IS NOT NULL)
	SELECT ` + ticketCols + ` FROM leased ORDER BY priority DESC, id`
}

// completeCTEs are the CTEs that complete the tickets $ids with fence tokens $tokens and
// results $branches, $result_dirs, $summaries at $now (finished and updated), their events
// saying $kind, $from, $to, each ending its open round. done holds the completed rows.
// Each ticket is found by its key (id = ANY, an index lookup each) and its entries in the
// arrays by its position in $ids: a join with unnest would be planned for 100 rows and
// could scan the table.
const completeCTEs = `done AS (
		UPDATE tickets t SET state = 'done', lease_expires_at = NULL, finished_at = $now, updated_at = $now,
			branch = ($branches::text[])[array_position($ids::bigint[], t.id)],
			result_dir = ($result_dirs::text[])[array_position($ids::bigint[], t.id)],
			summary = ($summaries::text[])[array_position($ids::bigint[], t.id)],
			reason = '', prev_event_id = t.last_event_id, last_event_id = nextval('events_id_seq')
		WHERE t.id = ANY($ids::bigint[]) AND t.state = 'running'
			AND t.fence_token = ($tokens::bigint[])[array_position($ids::bigint[], t.id)]
		RETURNING t.*),
	ended AS (UPDATE rounds SET outcome = $to, ended_at = $now WHERE ticket_id IN (SELECT id FROM done) AND outcome = 'open'),
	logged AS (
		INSERT INTO events (id, ticket_id, at, kind, from_state, to_state, reason, attempt, actor, prev_id)
		SELECT last_event_id, id, $now, $kind, $from, $to, '', attempts, lease_owner, prev_event_id FROM done)`

// numberCompletes numbers completeCTEs' parameters from $first on, in
// storedriver.CompleteBatchParams' order after its times ($now is $1).
func numberCompletes(first int) string {
	names := []string{"ids", "tokens", "branches", "result_dirs", "summaries", "kind", "from", "to"}
	pairs := []string{"$now", "$1"}
	for i, n := range names {
		pairs = append(pairs, "$"+n, "$"+strconv.Itoa(first+i))
	}
	return strings.NewReplacer(pairs...).Replace(completeCTEs)
}

// completeBatch is CompleteEnded for several tickets (storedriver.CompleteBatchParams):
// one statement for a fetch's completes. It returns the id and fence token of each ticket
// it completed.
var completeBatch = `WITH ` + numberCompletes(2) + `
	SELECT id, fence_token FROM done`

// completeAndClaim is completeCTEs (parameters after claimBatch's $1..$9, and $10
// paused) and claimBatch in one statement: a fetch that carries its workers' completes. The
// claimers are the workers ($3) whose complete ($ends, aligned with $3: the ticket each
// completes, 0 for none) was written, and the n-th ticket leased goes to the n-th of them,
// so a lost lease claims nothing and the statement can commit on its own. It returns the
// completed rows (state done) and the leased ones (state running), SQL.TicketCols each.
func completeAndClaim(paused bool) string {
	first := 10 + b2i(paused)
	ends := "$" + strconv.Itoa(first+8)
	claim := claimBatchWith(paused, `(SELECT count(*) FROM claimers)`, `(SELECT name FROM claimers c WHERE c.n = cut.n)`)
	claim = strings.TrimPrefix(claim, "WITH ")
	claim = claim[:strings.LastIndex(claim, "SELECT ")]
	return `WITH ` + numberCompletes(first) + `,
	claimers AS (
		SELECT w.name, row_number() OVER (ORDER BY w.ord) AS n
		FROM unnest($3::text[], ` + ends + `::bigint[]) WITH ORDINALITY AS w(name, end_id, ord)
		WHERE w.end_id = 0 OR w.end_id IN (SELECT id FROM done)),
	` + claim + `
	SELECT ` + ticketCols + ` FROM done
	UNION ALL
	SELECT ` + ticketCols + ` FROM leased`
}

// completeAndClaims[paused] are completeAndClaim's shapes.
var completeAndClaims = [2]string{completeAndClaim(false), completeAndClaim(true)}

// claimBatches[paused] are claimBatch's shapes.
var claimBatches = [2]string{claimBatch(false), claimBatch(true)}

// claimQueries[unpredicted][shape][rescue] are claimLease's shapes: shape 0 no filter, 1
// paused, 2 paused and avoid (an avoid shape binds $10 too, "[]" when nothing is paused);
// unpredicted 1 leases only a ticket without predicted files (ClaimParams.Unpredicted).
var claimQueries = [2][3][2]string{claimShapes(false), claimShapes(true)}

func claimShapes(unpredicted bool) [3][2]string {
	return [3][2]string{
		{claimLease(false, false, false, unpredicted), claimLease(false, false, true, unpredicted)},
		{claimLease(true, false, false, unpredicted), claimLease(true, false, true, unpredicted)},
		{claimLease(true, true, false, unpredicted), claimLease(true, true, true, unpredicted)},
	}
}

// leaseHorizonQuery is the earliest lease expiry among running tickets (math.MaxInt64 when
// none): before it no lease can be rescued, and a claim skips the rescue branch.
const leaseHorizonQuery = `SELECT coalesce(min(lease_expires_at), 9223372036854775807) FROM tickets
	WHERE finished_at IS NULL AND state = 'running'`

// appendQuery writes the reserved event of ticket $1; attemptActor are its attempt and
// actor.
func appendQuery(attemptActor string) string {
	return `INSERT INTO events (id, ticket_id, at, kind, from_state, to_state, reason, attempt, actor, prev_id)
		SELECT last_event_id, id, $2, $3, $4, $5, $6, ` + attemptActor + `, prev_event_id FROM tickets
		WHERE id = $1 AND last_event_id IS NOT NULL`
}

// statements are PostgreSQL's storedriver.SQL.
var statements = storedriver.SQL{
	Enqueue: `INSERT INTO tickets
			(source, external_id, repo, title, body, labels, priority, max_attempts, run_after, created_at, updated_at, last_event_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, nextval('events_id_seq'))
			ON CONFLICT (source, external_id) DO NOTHING RETURNING id`,
	TicketBySource: `SELECT id FROM tickets WHERE source = $1 AND external_id = $2`,
	SameText:       `SELECT id FROM tickets WHERE source = $1 AND repo = $2 AND title = $3 AND body = $4 ORDER BY id LIMIT 1`,
	Retext: `UPDATE tickets SET repo = $1, title = $2, body = $3, labels = $4, priority = $5, updated_at = $6
			WHERE id = $7 AND state = 'queued' AND fence_token = 0`,
	GetTicket:    `SELECT ` + ticketCols + ` FROM tickets WHERE id = $1`,
	TicketExists: `SELECT 1 FROM tickets WHERE id = $1`,
	CurrentState: `SELECT state, attempts FROM tickets WHERE id = $1`,
	List:         listQuery,

	Settle: `UPDATE tickets SET
			state = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE 'escalated' END,
			reason = CASE WHEN cancel_requested = 1
				THEN 'cancel requested; lease of ' || lease_owner || ' expired'
				ELSE 'lease of ' || lease_owner || ' expired: ' || (rescues + 1) || ' lost leases reach the limit of ' || $2::int ||
					' (the ticket may be crashing its worker; see its events and the daemon log)' END,
			rescues = rescues + 1, lease_expires_at = NULL, finished_at = $1::bigint, updated_at = $1::bigint
		WHERE finished_at IS NULL AND state = 'running' AND lease_expires_at <= $1::bigint
			AND (rescues + 1 >= $2::int OR cancel_requested = 1)
		RETURNING id, state, attempts, reason`,
	Heartbeat: `UPDATE tickets SET lease_expires_at = $1, updated_at = $2
			WHERE id = $3 AND fence_token = $4 AND state = 'running'`,
	CancelRequested: `SELECT cancel_requested FROM tickets WHERE id = $1`,
	Leased: `SELECT attempts, max_attempts + attempts_before, cancel_requested, lease_owner FROM tickets
			WHERE id = $1 AND fence_token = $2 AND state = 'running'`,
	Complete: `UPDATE tickets SET state = 'done', lease_expires_at = NULL,
				finished_at = $1, updated_at = $2, branch = $3, result_dir = $4, summary = $5, reason = '', ` + reserveEvent + `
			WHERE id = $6 AND fence_token = $7 AND state = 'running'`,
	CompleteEnded: `WITH done AS (
			UPDATE tickets SET state = 'done', lease_expires_at = NULL,
				finished_at = $1, updated_at = $2, branch = $3, result_dir = $4, summary = $5, reason = '', ` + reserveEvent + `
			WHERE id = $6 AND fence_token = $7 AND state = 'running'
			RETURNING id, last_event_id, prev_event_id, attempts, lease_owner),
		ended AS (UPDATE rounds SET outcome = $10, ended_at = $1 WHERE ticket_id IN (SELECT id FROM done) AND outcome = 'open')
		INSERT INTO events (id, ticket_id, at, kind, from_state, to_state, reason, attempt, actor, prev_id)
		SELECT last_event_id, id, $1, $8, $9, $10, '', attempts, lease_owner, prev_event_id FROM done`,
	EndAttempt: `UPDATE tickets SET state = $1, attempts = $2, run_after = $3,
				lease_expires_at = NULL, finished_at = $4, updated_at = $5, reason = $6,
				branch = CASE WHEN $7::text <> '' THEN $7::text ELSE branch END,
				result_dir = CASE WHEN $8::text <> '' THEN $8::text ELSE result_dir END, ` + reserveEvent + `
			WHERE id = $9 AND fence_token = $10 AND state = 'running'`,
	FinishCancelled: `UPDATE tickets SET state = 'cancelled', lease_expires_at = NULL,
				finished_at = $1, updated_at = $2, reason = $3, ` + reserveEvent + `
			WHERE id = $4 AND fence_token = $5 AND state = 'running'`,
	SaveTriage: `UPDATE tickets SET triage = $1, updated_at = $2
			WHERE id = $3 AND fence_token = $4 AND state = 'running'`,
	CancelQueued: `UPDATE tickets SET state = 'cancelled', finished_at = $1, updated_at = $2, reason = $3,
				question = '', ` + reserveEvent + ` WHERE id = $4 AND state = $5`,
	RequeueParked: `UPDATE tickets SET state = 'queued', run_after = $1, updated_at = $2, reason = $3, ` + reserveEvent + `
				WHERE id = $4 AND state = 'parked'`,
	ParkedDue: `SELECT id, attempts FROM tickets
			WHERE finished_at IS NULL AND state = 'parked' AND run_after <= $1`,
	Unpark: `UPDATE tickets SET state = 'queued', run_after = $1, updated_at = $2, ` + reserveEvent + `
				WHERE id = $3 AND state = 'parked'`,
	FlagCancel: `UPDATE tickets SET cancel_requested = 1, updated_at = $1, reason = $2,
				` + reserveEvent + ` WHERE id = $3 AND state = 'running'`,
	Accept: `UPDATE tickets SET state = 'done', finished_at = $1, updated_at = $2, branch = $3, result_dir = $4,
				reason = $5, ` + reserveEvent + ` WHERE id = $6 AND state = 'escalated'`,
	Requeue: `UPDATE tickets SET state = 'queued', attempts_before = attempts, crashes = 0, run_after = $1,
				fence_token = fence_token + 1, lease_expires_at = NULL, cancel_requested = 0,
				finished_at = NULL, updated_at = $2, reason = $3, question = '', ` + reserveEvent + `
			WHERE id = $4 AND state = $5`,

	AskHuman: `UPDATE tickets SET state = 'needs_info', attempts = $1, lease_expires_at = NULL,
				updated_at = $2, reason = $3, question = $4, questions = questions + 1,
				branch = CASE WHEN $5::text <> '' THEN $5::text ELSE branch END,
				result_dir = CASE WHEN $6::text <> '' THEN $6::text ELSE result_dir END, ` + reserveEvent + `
			WHERE id = $7 AND fence_token = $8 AND state = 'running'`,
	NeedBudget: `UPDATE tickets SET state = 'needs_budget', attempts = $1, lease_expires_at = NULL,
				updated_at = $2, reason = $3,
				branch = CASE WHEN $4::text <> '' THEN $4::text ELSE branch END,
				result_dir = CASE WHEN $5::text <> '' THEN $5::text ELSE result_dir END, ` + reserveEvent + `
			WHERE id = $6 AND fence_token = $7 AND state = 'running'`,
	AddBudget: `UPDATE tickets SET state = 'queued', run_after = $1, updated_at = $2, reason = $3,
				budget_extra_usd = budget_extra_usd + $4, ` + reserveEvent + `
			WHERE id = $5 AND state = 'needs_budget'`,
	InsertQuestion: `INSERT INTO questions (ticket_id, n, attempt, question, asked_at)
			SELECT id, questions, $1, $2, $3 FROM tickets WHERE id = $4`,
	AnswerQuestion: `UPDATE questions SET answer = $1, answered_by = $2, answered_at = $3
			WHERE ticket_id = $4 AND answer IS NULL AND n = (SELECT questions FROM tickets WHERE id = $4)`,
	Answered: `UPDATE tickets SET state = 'queued', run_after = $1, updated_at = $2, question = '', reason = $3, ` + reserveEvent + `
			WHERE id = $4 AND state = 'needs_info'`,
	RequeueNeedsInfo: `UPDATE tickets SET state = 'queued', run_after = $1, updated_at = $2, reason = $3, question = '', ` + reserveEvent + `
			WHERE id = $4 AND state = 'needs_info'`,
	Questions: `SELECT ticket_id, n, attempt, question, asked_at, answer, answered_by, answered_at, comment_url
		FROM questions WHERE ticket_id = $1 ORDER BY n`,
	SetQuestionComment: `UPDATE questions SET comment_url = $1 WHERE ticket_id = $2 AND n = $3`,
	WaitingForAnswer: func(limited bool) string {
		q := `SELECT ` + prefixCols("t.", ticketCols) + `, q.n, q.attempt, q.question, q.asked_at, q.comment_url
		FROM tickets t JOIN questions q ON q.ticket_id = t.id AND q.n = t.questions
		WHERE t.finished_at IS NULL AND t.state = 'needs_info' AND ($1::text = '' OR t.source = $1::text)
		ORDER BY q.asked_at, t.id`
		if limited {
			q += ` LIMIT $2`
		}
		return q
	},

	ReserveEvent:       `UPDATE tickets SET ` + reserveEvent + ` WHERE id = $1`,
	AppendEvent:        appendQuery(`$7, $8`),
	AppendEventFromRow: appendQuery(`attempts, lease_owner`),
	Events: `WITH RECURSIVE chain(id) AS (
			SELECT last_event_id FROM tickets WHERE id = $1
			UNION ALL
			SELECT e.prev_id FROM chain JOIN events e ON e.id = chain.id WHERE e.prev_id IS NOT NULL)
		SELECT e.id, e.ticket_id, e.at, e.kind, e.from_state, e.to_state, e.attempt, e.actor, e.reason
		FROM chain JOIN events e ON e.id = chain.id ORDER BY e.id`,
	TransportReleases: `WITH RECURSIVE
			since(id) AS (SELECT after_event_id FROM runs WHERE id = $2),
			chain(id) AS (
				SELECT last_event_id FROM tickets WHERE id = $1 AND last_event_id > (SELECT id FROM since)
				UNION ALL
				SELECT e.prev_id FROM chain JOIN events e ON e.id = chain.id WHERE e.prev_id > (SELECT id FROM since))
		SELECT count(*) FROM chain JOIN events e ON e.id = chain.id
		WHERE e.kind = 'released' AND e.reason LIKE 'transport:%'`,

	InsertModelCall: `INSERT INTO model_calls (ticket_id, run_id, attempt, role, model, endpoint,
				prompt_tokens, cached_tokens, cache_write_tokens, completion_tokens, reasoning_tokens, cost_usd,
				latency_ms, finish_reason, error_class, error, retries, started_at,
				usage_reported, cost_source, price_cost_usd, provider_cost_usd, compactions, completion_unknown, continuations)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)
			RETURNING id`,
	ModelCalls: `SELECT id, ticket_id, coalesce(run_id, 0), attempt, role, model, endpoint,
			prompt_tokens, cached_tokens, cache_write_tokens, completion_tokens, reasoning_tokens, cost_usd,
			latency_ms, finish_reason, error_class, error, retries, started_at,
			usage_reported, cost_source, price_cost_usd, provider_cost_usd, compactions, completion_unknown, continuations
		FROM model_calls WHERE ticket_id = $1 ORDER BY id`,
	InsertToolCall: `INSERT INTO tool_calls (ticket_id, attempt, step, tool, args, result, ok, duration_ms, at, rung)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
	ToolCalls: `SELECT id, ticket_id, attempt, step, tool, args, result, ok, duration_ms, at, rung
		FROM tool_calls WHERE ticket_id = $1 ORDER BY id`,
	InsertReview: `INSERT INTO reviews (ticket_id, attempt, round, kept, dropped, at, reviewer) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
	Reviews: `SELECT ticket_id, attempt, round, kept, dropped, at, reviewer FROM reviews
		WHERE ticket_id = $1 ORDER BY id`,
	InsertEndpointEvent: `INSERT INTO endpoint_events (run_id, endpoint, base_url, down, since, at, last_error)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
	EndpointEvents:    `SELECT id, coalesce(run_id, 0), endpoint, base_url, down, since, at, last_error FROM endpoint_events ORDER BY id`,
	EndpointEventsRun: `SELECT id, coalesce(run_id, 0), endpoint, base_url, down, since, at, last_error FROM endpoint_events WHERE run_id = $1 ORDER BY id`,
	RecordOutput: `INSERT INTO outputs (ticket_id, kind, url, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (ticket_id, kind) DO NOTHING`,
	Unpublished: `SELECT ` + ticketCols + ` FROM tickets
		WHERE source = $1 AND state = $2 AND NOT EXISTS (
			SELECT 1 FROM outputs o WHERE o.ticket_id = tickets.id AND o.kind = $3)
		ORDER BY finished_at, id LIMIT $4`,
	Outputs: `SELECT ticket_id, kind, url, created_at FROM outputs WHERE ticket_id = $1 ORDER BY created_at`,

	StartRun:      `INSERT INTO runs (trigger, started_at, after_event_id) VALUES ($1, $2, (SELECT coalesce(max(id), 0) FROM events)) RETURNING id`,
	SetRunSandbox: `UPDATE runs SET sandbox = $1 WHERE id = $2`,
	RunWindow:     `SELECT after_event_id, ended_at FROM runs WHERE id = $1`,
	RunEnding: `SELECT after_event_id, outcome, error, (SELECT count(*) FROM run_nodes n WHERE n.run_id = runs.id)
		FROM runs WHERE id = $1`,
	FinishRun: `UPDATE runs SET ended_at = $1, outcome = $4, error = $5,
			worked    = (SELECT count(DISTINCT ticket_id) FROM events WHERE id > $2 AND at <= $1 AND kind = 'claimed'),
			claimed   = (SELECT count(*) FROM events WHERE id > $2 AND at <= $1 AND kind = 'claimed'),
			done      = (SELECT count(*) FROM events WHERE id > $2 AND at <= $1 AND to_state = 'done' AND from_state <> 'done'),
			escalated = (SELECT count(*) FROM events WHERE id > $2 AND at <= $1 AND to_state = 'escalated' AND from_state <> 'escalated'),
			retried   = (SELECT count(*) FROM events WHERE id > $2 AND at <= $1 AND kind = 'retry'),
			cost_usd  = (SELECT coalesce(sum(cost_usd), 0) FROM model_calls WHERE run_id = $3)
			WHERE id = $3`,
	Runs: `SELECT id, trigger, sandbox, started_at, ended_at, outcome, error, worked,
			claimed, done, escalated, retried, cost_usd
		FROM runs ORDER BY id DESC LIMIT $1`,
	NightTotals: `SELECT outcome, count(*), max(ended_at) FROM runs
		WHERE outcome <> '' AND ended_at IS NOT NULL GROUP BY outcome`,
	UsageEstimates:    usageEstimates,
	UsageEstimatesRun: usageEstimates + ` WHERE run_id = $1`,
	JoinRunNode: `INSERT INTO run_nodes (run_id, node, started_at) VALUES ($1, $2, $3)
			ON CONFLICT (run_id, node) DO UPDATE SET finished_at = NULL, died = 0, lease_expires_at = NULL`,
	FinishRunNode: `UPDATE run_nodes SET finished_at = $1 WHERE run_id = $2 AND node = $3`,
	OpenRun: `SELECT id FROM runs WHERE started_at >= $1
			AND EXISTS (SELECT 1 FROM run_nodes n WHERE n.run_id = runs.id AND n.finished_at IS NULL)
		ORDER BY id DESC LIMIT 1`,
	RunNodes: `SELECT node, started_at, finished_at FROM run_nodes WHERE run_id = $1 ORDER BY started_at, node`,
	RunCost: `SELECT coalesce(sum(cost_usd), 0), coalesce(sum(cost_usd) FILTER (WHERE cost_source = 'estimate'), 0)
		FROM model_calls WHERE run_id = $1`,

	SaveArtifact: `INSERT INTO artifacts (ticket_id, path, content, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (ticket_id, path) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at`,
	Artifacts: `SELECT path, length(content)::bigint, updated_at FROM artifacts WHERE ticket_id = $1 ORDER BY path`,
	Artifact:  `SELECT content FROM artifacts WHERE ticket_id = $1 AND path = $2`,
	GCArtifacts: `DELETE FROM artifacts WHERE path <> 'report.md' AND ticket_id IN
			(SELECT id FROM tickets WHERE finished_at IS NOT NULL AND finished_at < $1 AND pruned_at IS NULL)`,

	LoadBaseline: `UPDATE baselines SET used_at = $1, uses = uses + 1
			WHERE repo = $2 AND base_commit = $3 AND checks_hash = $4
			RETURNING results, flaky, duration_ms, created_at, used_at, uses`,
	SaveBaseline: `INSERT INTO baselines (repo, base_commit, checks_hash, results, flaky, duration_ms, created_at, used_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (repo, base_commit, checks_hash) DO UPDATE SET
				results = excluded.results, flaky = excluded.flaky, duration_ms = excluded.duration_ms,
				created_at = excluded.created_at, used_at = excluded.used_at, uses = 0`,
	PruneBaselines: `DELETE FROM baselines WHERE used_at < $1`,

	Due: `SELECT state, 0, count(*), min(run_after), min(lease_expires_at), count(*) FILTER (WHERE run_after <= $1) FROM tickets
		WHERE finished_at IS NULL GROUP BY state`,
	DuePaused: `SELECT state, CASE WHEN repo IN (SELECT json_array_elements_text($1::text::json)) THEN 1 ELSE 0 END,
			count(*), min(run_after), min(lease_expires_at), count(*) FILTER (WHERE run_after <= $2)
		FROM tickets WHERE finished_at IS NULL GROUP BY 1, 2`,
	CountByState: `SELECT state, count(*) FROM tickets GROUP BY state`,
	EventKinds:   `SELECT kind, count(*), count(*) FILTER (WHERE kind = 'lease_expired' AND to_state = 'queued') FROM events GROUP BY kind`,
	EventsByRepo: `SELECT t.repo, count(*) FROM events e JOIN tickets t ON t.id = e.ticket_id WHERE e.kind = $1 GROUP BY t.repo ORDER BY t.repo`,
	CallTotals: `SELECT role, model, count(*), count(*) FILTER (WHERE error <> ''), sum(prompt_tokens)::bigint,
			sum(cached_tokens)::bigint, sum(completion_tokens)::bigint, sum(reasoning_tokens)::bigint,
			coalesce(sum(cost_usd), 0), sum(latency_ms)::bigint
		FROM model_calls GROUP BY role, model ORDER BY role, model`,
	ToolTotals: toolTotals,
	NightTokens: func(n int) string {
		marks := make([]string, n)
		for i := range marks {
			marks[i] = "$" + strconv.Itoa(i+1)
		}
		return nightTokensQuery(strings.Join(marks, ", "))
	},
	Progress: `SELECT t.attempts,
			coalesce((SELECT step FROM tool_calls WHERE ticket_id = t.id AND attempt = t.attempts ORDER BY id DESC LIMIT 1), 0),
			coalesce((SELECT tool FROM tool_calls WHERE ticket_id = t.id AND attempt = t.attempts ORDER BY id DESC LIMIT 1), ''),
			(SELECT max(at) FROM tool_calls WHERE ticket_id = t.id AND attempt = t.attempts),
			(SELECT count(*) FROM model_calls WHERE ticket_id = t.id AND attempt = t.attempts),
			(SELECT max(started_at) FROM model_calls WHERE ticket_id = t.id AND attempt = t.attempts)
		FROM tickets t WHERE t.id = $1`,
	StatsTickets: func(run bool) string {
		return `SELECT state, attempts FROM tickets WHERE id IN (` + ticketScope(run) + `)`
	},
	TicketDurations: func(run bool) string {
		scope := ``
		if run {
			scope = ` AND id > $1::bigint AND at <= $2::bigint`
		}
		return `SELECT c.ticket_id, c.first, t.finished_at
		FROM (SELECT ticket_id, min(at) AS first FROM events WHERE kind = 'claimed'` + scope + ` GROUP BY ticket_id) c
		JOIN tickets t ON t.id = c.ticket_id`
	},
	StatsCalls: func(run bool) string {
		return `SELECT count(*), coalesce(sum(cost_usd), 0), CASE WHEN bool_or(cost_usd IS NULL OR completion_unknown = 1) THEN 1 ELSE 0 END,
			coalesce(sum(prompt_tokens), 0)::bigint, coalesce(sum(cached_tokens), 0)::bigint, coalesce(sum(completion_tokens), 0)::bigint
		FROM model_calls WHERE id IN (` + callScope(run) + `)`
	},
	StatsFirstRequests: func(run bool) string {
		return `SELECT role, sum(cached_tokens)::bigint, sum(prompt_tokens)::bigint FROM model_calls
		WHERE id IN (SELECT min(id) FROM model_calls WHERE id IN (` + callScope(run) + `) GROUP BY ticket_id, role)
		GROUP BY role`
	},
	StatsReviews: func(run bool) string {
		q := `SELECT count(*), coalesce(sum(dropped), 0) FROM reviews WHERE ticket_id IN (` + ticketScope(run) + `)`
		if run {
			q += ` AND at >= (SELECT started_at FROM runs WHERE id = $3) AND at <= $2`
		}
		return q
	},

	FinishedBefore: `SELECT ` + ticketCols + ` FROM tickets
		WHERE finished_at IS NOT NULL AND finished_at < $1 ORDER BY finished_at, id`,

	Tables: tables(),
	AfterCopy: `SELECT setval(pg_get_serial_sequence(t, 'id'), coalesce(m, 0) + 1, false) FROM (VALUES
		('tickets', (SELECT max(id) FROM tickets)), ('runs', (SELECT max(id) FROM runs)),
		('model_calls', (SELECT max(id) FROM model_calls)), ('tool_calls', (SELECT max(id) FROM tool_calls)),
		('endpoint_events', (SELECT max(id) FROM endpoint_events)), ('reviews', (SELECT max(id) FROM reviews)),
		('events', (SELECT max(id) FROM events))) AS v(t, m)`,

	GCToolCalls: `UPDATE tool_calls SET args = '', result = ''
			WHERE ticket_id IN (SELECT id FROM tickets WHERE finished_at IS NOT NULL AND finished_at < $1 AND pruned_at IS NULL)`,
	GCTickets: `UPDATE tickets SET body = '', triage = '', summary = '', pruned_at = $1
			WHERE finished_at IS NOT NULL AND finished_at < $2 AND pruned_at IS NULL`,

	InsertRequeue: `INSERT INTO requeues (ticket_id, n, at, actor, from_state, attempts, note, branch)
			SELECT $1, coalesce(max(n), 0) + 1, $2, $3, $4, $5, $6, $7 FROM requeues WHERE ticket_id = $1`,
	Requeues:     `SELECT n, at, actor, from_state, attempts, note, branch FROM requeues WHERE ticket_id = $1 ORDER BY n`,
	KeptBranches: `SELECT ticket_id, branch FROM requeues WHERE branch <> '' UNION SELECT ticket_id, branch FROM rounds WHERE branch <> ''`,
	Identity:     `SELECT value FROM store_meta WHERE key = 'identity'`,
	BeatRunNode:  `UPDATE run_nodes SET lease_expires_at = $1 WHERE run_id = $2 AND node = $3 AND finished_at IS NULL`,
	OpenRunNodes: `SELECT run_id, node, started_at, coalesce(lease_expires_at, 0) FROM run_nodes
			WHERE finished_at IS NULL ORDER BY run_id, node`,
	FinishDeadRunNode: `UPDATE run_nodes SET finished_at = $1, died = 1 WHERE run_id = $2 AND node = $3 AND finished_at IS NULL`,
	RecentRunNodes:    `SELECT died, coalesce(finished_at, 0) FROM run_nodes WHERE node = $1 ORDER BY started_at DESC, run_id DESC LIMIT $2`,
	InFlight: `SELECT id, state FROM tickets
			WHERE (state = 'running' AND ($1::text = '' OR lease_node = $1::text))
				OR ($1::text <> '' AND rescued_node = $1::text AND updated_at >= $2::bigint)
			ORDER BY id`,
	ExpireLeases: `UPDATE tickets SET lease_expires_at = $1::bigint
			WHERE finished_at IS NULL AND state = 'running' AND lease_expires_at > $1::bigint AND ($2::text = '' OR lease_node = $2::text)`,
	AddCrash: `UPDATE tickets SET crashes = crashes + 1, updated_at = $1, ` + reserveEvent + ` WHERE id = $2`,
	EscalateCrashed: `UPDATE tickets SET state = 'escalated', lease_expires_at = NULL, fence_token = fence_token + 1,
				finished_at = $1, updated_at = $2, reason = $3, ` + reserveEvent + `
			WHERE id = $4 AND state IN ('running', 'queued')`,
	ClearIntakeSkips: `DELETE FROM intake_skips WHERE source = $1`,
	InsertIntakeSkip: `INSERT INTO intake_skips (source, path, reason, at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (source, path) DO UPDATE SET reason = excluded.reason, at = excluded.at`,
	IntakeSkips: `SELECT source, path, reason, at FROM intake_skips ORDER BY source, path`,
	RecordEnvironment: `INSERT INTO environments (repo, node, env_key, ok, cached, built_at, took_ms, at, error, output) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (repo, node) DO UPDATE SET env_key = excluded.env_key, ok = excluded.ok, cached = excluded.cached, built_at = excluded.built_at, took_ms = excluded.took_ms, at = excluded.at, error = excluded.error, output = excluded.output`,
	Environments: `SELECT repo, node, env_key, ok, cached, built_at, took_ms, at, error, output FROM environments ORDER BY repo, node`,
	Dup:          dupStatements,
	Round:        roundStatements,
	Console:      consoleStatements,
	Overlap:      overlapStatements,
}

const usageEstimates = `SELECT count(*), count(*) FILTER (WHERE usage_reported = 0),
			count(*) FILTER (WHERE cost_usd IS NULL OR completion_unknown = 1),
			coalesce(sum(cost_usd) FILTER (WHERE cost_source = 'estimate'), 0),
			coalesce(sum(cost_usd) FILTER (WHERE cost_source = 'provider'), 0)
		FROM model_calls`

// ticketScope and callScope are the tickets and model calls Stats counts: all of them, or a
// run's ($1 after_event_id, $2 end, $3 run id). Every statement of a run's stats binds all
// three, so each names their types.
func ticketScope(run bool) string {
	if !run {
		return `SELECT id FROM tickets`
	}
	return `SELECT ticket_id FROM events WHERE kind = 'claimed' AND id > $1::bigint AND at <= $2::bigint
			UNION ALL SELECT ticket_id FROM model_calls WHERE run_id = $3::bigint`
}

func callScope(run bool) string {
	if !run {
		return `SELECT id FROM model_calls`
	}
	// $1 and $2 are bound but unused here: name their types for the planner.
	return `SELECT id FROM model_calls WHERE run_id = $3::bigint AND $1::bigint IS NOT NULL AND $2::bigint IS NOT NULL`
}

func toolTotals(bucketsMS []int64) string {
	q := `SELECT tool, count(*), count(*) FILTER (WHERE ok = 0), sum(duration_ms)::bigint`
	for _, b := range bucketsMS {
		q += fmt.Sprintf(", count(*) FILTER (WHERE duration_ms <= %d)", b)
	}
	return q + ` FROM tool_calls GROUP BY tool ORDER BY tool`
}

// listQuery builds List's statement: the listed ids first (through tickets_open when only
// unfinished states are asked for), then their model call totals.
func listQuery(f storedriver.ListSpec) (string, []any) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(f.States) > 0 {
		active := true
		for _, st := range f.States {
			active = active && (st == "queued" || st == "running" || st == "parked" || st == "needs_info" || st == "needs_budget")
		}
		if active {
			where = append(where, "finished_at IS NULL")
		}
		where = append(where, "state = ANY ("+arg(f.States)+"::text[])")
	}
	if f.Repo != "" {
		where = append(where, "repo = "+arg(f.Repo))
	}
	if f.Since != 0 {
		where = append(where, "created_at >= "+arg(f.Since))
	}
	if f.BeforeID > 0 {
		where = append(where, "id < "+arg(f.BeforeID))
	}
	ids := "SELECT id FROM tickets"
	if len(where) > 0 {
		ids += " WHERE " + strings.Join(where, " AND ")
	}
	ids += " ORDER BY id DESC"
	if f.Limit > 0 {
		ids += " LIMIT " + arg(f.Limit)
	}
	q := `WITH ids AS MATERIALIZED (` + ids + `),
		m AS (SELECT ticket_id, count(*) AS n, sum(prompt_tokens)::bigint AS p, sum(cached_tokens)::bigint AS c,
				sum(completion_tokens)::bigint AS o, sum(cost_usd) AS cost,
				max(CASE WHEN cost_usd IS NULL OR completion_unknown = 1 THEN 1 ELSE 0 END) AS unknown,
				max(CASE WHEN usage_reported = 0 THEN 1 ELSE 0 END) AS estimated
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
		} else if !strings.HasPrefix(p, "'") {
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
			marks[i] = "$" + strconv.Itoa(i+1)
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
	return `SELECT run_id, count(*), coalesce(sum(prompt_tokens), 0)::bigint, coalesce(sum(cached_tokens), 0)::bigint,
			coalesce(sum(completion_tokens), 0)::bigint
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
