// Package record declares the attempt record: results/<id>/attempt-<n>/attempt.json, what one
// attempt left for the human. The daemon writes it, the status page and report.md read it;
// this is its one declaration.
package record

import (
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/timing"
)

// Ending is how an attempt ended, in the words of its report and its record.
type Ending string

const (
	Done        Ending = "done"
	Retry       Ending = "retry"
	Escalated   Ending = "escalated"
	Cancelled   Ending = "cancelled"
	Released    Ending = "released"
	NeedsInfo   Ending = "needs_info"
	NeedsBudget Ending = "needs_budget"
)

// Endings are the endings a record may name, in the order a reader meets them.
var Endings = []Ending{Done, Retry, Escalated, Cancelled, Released, NeedsInfo, NeedsBudget}

// Attempt is one attempt's record (attempt.json).
type Attempt struct {
	Attempt  int                `json:"attempt"`
	Ending   Ending             `json:"ending"`
	Status   pipeline.Status    `json:"status"`
	Reason   string             `json:"reason"`
	Branch   string             `json:"branch,omitempty"` // holds the attempt's (partial) change
	Summary  string             `json:"summary,omitempty"`
	Submits  int                `json:"submits"`
	Steps    int                `json:"steps"`
	Rounds   int                `json:"review_rounds"`
	Dropped  int                `json:"dropped_findings"`
	Flaky    []string           `json:"flaky,omitempty"`
	Findings []pipeline.Finding `json:"findings,omitempty"`
	Verdict  *pipeline.Verdict  `json:"verdict,omitempty"`
	// History is what the attempt tried, one line each (which tier of the checks found
	// what, flaky tests, compactions): the status page's account of the attempt.
	History []string `json:"history,omitempty"`
	// Time is where the attempt's time went up to this record's writing (package timing):
	// model wait, checks, git, sandbox start, store writes; the ending's own store write
	// comes after it.
	Time timing.Split `json:"time"`
}
