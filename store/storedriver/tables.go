package storedriver

// SchemaTables are the tables of the schema (v26) and their columns, in copy order: a
// table comes after those its foreign keys name, and events by id (prev_id < id). The
// engines build their SQL.Tables from it. PostgreSQL's tickets.predicted is not copied:
// its triggers set it from the predicted_files rows the copy writes.
var SchemaTables = []struct {
	Name    string
	Columns []string
	OrderBy string
}{
	{"runs", []string{"id", "trigger", "started_at", "ended_at", "claimed", "done", "escalated", "retried", "cost_usd", "after_event_id", "sandbox", "outcome", "error", "worked"}, "id"},
	{"tickets", []string{"id", "source", "external_id", "repo", "title", "body", "labels", "priority", "state", "attempts", "max_attempts",
		"run_after", "lease_owner", "lease_expires_at", "fence_token", "cancel_requested", "branch", "result_dir", "summary", "reason", "triage",
		"created_at", "updated_at", "finished_at", "rescued_from", "pruned_at", "rescues", "last_event_id", "prev_event_id", "lease_node",
		"question", "questions", "attempts_before", "crashes", "rescued_node", "budget_extra_usd"}, "id"},
	{"events", []string{"id", "ticket_id", "at", "kind", "from_state", "to_state", "attempt", "actor", "reason", "prev_id"}, "id"},
	{"model_calls", []string{"id", "ticket_id", "attempt", "role", "model", "endpoint", "prompt_tokens", "cached_tokens", "completion_tokens",
		"cost_usd", "latency_ms", "finish_reason", "error", "started_at", "run_id", "cache_write_tokens", "reasoning_tokens", "error_class",
		"retries", "usage_reported", "cost_source", "price_cost_usd", "provider_cost_usd", "compactions", "completion_unknown", "continuations"}, "id"},
	{"tool_calls", []string{"id", "ticket_id", "attempt", "step", "tool", "args", "result", "ok", "duration_ms", "at", "rung"}, "id"},
	{"endpoint_events", []string{"id", "run_id", "endpoint", "base_url", "down", "since", "at", "last_error"}, "id"},
	{"outputs", []string{"ticket_id", "kind", "url", "created_at"}, "ticket_id, kind"},
	{"reviews", []string{"id", "ticket_id", "attempt", "round", "kept", "dropped", "at", "reviewer"}, "id"},
	{"baselines", []string{"repo", "base_commit", "checks_hash", "results", "flaky", "duration_ms", "created_at", "used_at", "uses"}, "repo, base_commit, checks_hash"},
	{"run_nodes", []string{"run_id", "node", "started_at", "finished_at", "lease_expires_at", "died"}, "run_id, node"},
	{"artifacts", []string{"ticket_id", "path", "content", "updated_at"}, "ticket_id, path"},
	{"questions", []string{"ticket_id", "n", "attempt", "question", "asked_at", "answer", "answered_by", "answered_at", "comment_url"}, "ticket_id, n"},
	{"requeues", []string{"ticket_id", "n", "at", "actor", "from_state", "attempts", "note", "branch"}, "ticket_id, n"},
	// The target's migration wrote its own identity: the copy replaces it (ReplacedOnCopy).
	{"store_meta", []string{"key", "value"}, "key"},
	{"intake_skips", []string{"source", "path", "reason", "at"}, "source, path"},
	{"environments", []string{"repo", "node", "env_key", "ok", "cached", "built_at", "took_ms", "at", "error", "output"}, "repo, node"},
	{"duplicate_links", []string{"ticket_id", "of_id", "reason", "linked_at", "unlinked_at", "unlinked_by"}, "ticket_id"},
	{"rounds", []string{"ticket_id", "n", "at", "actor", "source", "note", "threads", "branch", "attempts", "outcome", "ended_at", "comment_url"}, "ticket_id, n"},
	{"pull_watch", []string{"ticket_id", "review_cursor", "ci_head", "ci_state", "ci_detail", "ci_at"}, "ticket_id"},
	{"dismissals", []string{"item", "at", "actor", "note"}, "item"},
	{"night_digests", []string{"run_id", "at", "ok", "error"}, "run_id"},
	{"predicted_files", []string{"ticket_id", "file", "source"}, "ticket_id, file"},
}

// ReplacedOnCopy names the tables whose rows the target of a copy already has (its own
// migration wrote them), keyed by the column a copied row replaces the target's on.
var ReplacedOnCopy = map[string]string{"store_meta": "key"}
