// Package scriptedmodel is a TEST DOUBLE for an OpenAI-compatible model endpoint: a
// loopback HTTP server (POST /v1/chat/completions, GET /v1/models) that answers ticketd's
// roles from a scenario instead of a model. Tests, `ticketd demo` and the offline
// benchmark point ticketd at its URL; the product code only ever sees that URL, so the
// real path and the scripted one are the same code.
//
// Every answer says where it came from: "system_fingerprint" is
// "scripted-model-test-double" and "model" echoes the requested model.
//
// Like a real model it keeps no conversation state: each answer is decided from the
// request's messages — the role line ("ticketd role: maker") in the system message, the
// ticket text in the user message (matched against each Case's Match), and the tool
// calls made so far with their results. The one exception is CheckerBlocksOnce and
// JudgeFailsOnce, which count reviews per case, so use a fresh Server per night.
//
// A Case with Realistic set errs as real models do (see Realism): mangled old_text, a path
// that does not exist, redundant reads, prose, broken JSON, a wrong first fix, each drawn
// reproducibly from Options.Seed, and recovers from the product's real tool answers.
//
// Told by a refused submit or a run_checks result that a file it wrote whole breaks the
// project's lint (ruff's I002 required import, B007 unused loop variable, in the
// "RULE: path:line: message" lines the feedback carries), any maker mends it as a model
// does: it writes the file again with the import added, the loop variable renamed to _.
//
// Usage is computed from the request, never constant: prompt tokens are ceil(bytes/4) of
// the canonical prompt (tools, then messages), completion tokens likewise of the answer,
// and a simulated prefix cache follows OpenAI's rules (see cache.go). Faults (429, 500)
// and their Retry-After are drawn reproducibly from Options.Seed.
package scriptedmodel
