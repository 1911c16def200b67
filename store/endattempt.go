package store

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// EndKind names the transition that ends a leased attempt.
type EndKind string

// The transitions EndAttempt performs, one per worker ending method.
const (
	EndComplete   EndKind = "complete"         // Complete: done, with Result
	EndFail       EndKind = "fail"             // Fail: retried, escalated or released, per Failure
	EndAsk        EndKind = "ask"              // AskHuman: needs_info, with Asked
	EndNeedBudget EndKind = "need_budget"      // NeedBudget: needs_budget, with Reason, Branch, ResultDir
	EndPark       EndKind = "park"             // Park: parked until Until, with Reason
	EndCancelled  EndKind = "finish_cancelled" // FinishCancelled: cancelled, with Reason
)

// Ending is how one leased attempt ends: the transition, and the files of its results
// folder kept with it. Only the fields of Kind are read.
type Ending struct {
	ID, Token int64
	Kind      EndKind
	Result    Result  // EndComplete
	Failure   Failure // EndFail
	Asked     Asked   // EndAsk
	// Reason says why, for EndNeedBudget, EndPark and EndCancelled.
	Reason string
	// Branch and ResultDir keep the attempt's work, for EndNeedBudget.
	Branch, ResultDir string
	// Until is when a parked ticket may come back (EndPark).
	Until time.Time
	// Artifacts are the attempt's results files (SaveArtifact's), written with the
	// transition or not at all.
	Artifacts []ArtifactFile
}

// ArtifactFile is one results file to keep: its path inside the ticket's results folder and
// its content.
type ArtifactFile struct {
	Path    string
	Content []byte
}

// endOps is each kind's operation name (for the engine's retries), error text, and whether
// idle workers are told (a lease ended that may leave the night's work done, or a released
// ticket is claimable).
var endOps = map[EndKind]struct {
	op, failed string
	notify     bool
}{
	EndComplete:   {"complete", "complete ticket %d token %d", true},
	EndFail:       {"fail", "fail ticket %d token %d", true},
	EndAsk:        {"ask human", "ask on ticket %d token %d", true},
	EndNeedBudget: {"need budget", "stop ticket %d token %d for budget", true},
	EndPark:       {"park", "park ticket %d token %d", false},
	EndCancelled:  {"finish cancelled", "finish cancelled ticket %d token %d", false},
}

// EndAttempt ends a leased attempt in one transaction: the transition of e.Kind (the same as
// Complete, Fail, AskHuman, NeedBudget, Park or FinishCancelled), its event, and
// e.Artifacts. It returns the ticket's new state. Fenced like them: a lost lease
// (ErrLeaseLost) or any failed write leaves the ticket and its artifacts as they were.
func (s *Store) EndAttempt(ctx context.Context, e Ending) (State, error) {
	ops, ok := endOps[e.Kind]
	if !ok {
		return "", fmt.Errorf("end attempt of ticket %d: unknown ending %q: want complete, fail, ask, need_budget, park or finish_cancelled", e.ID, e.Kind)
	}
	if err := s.checkEnding(e); err != nil {
		return "", err
	}
	var to State
	err := s.write(ctx, ops.op, func(ctx context.Context, tx storedriver.Tx) (err error) {
		if to, err = s.endTx(ctx, tx, e); err != nil {
			return err
		}
		// SQL.CompleteEnded ends the round with the transition.
		if roundEnded := e.Kind == EndComplete && s.q.CompleteEnded != ""; !roundEnded {
			if err := s.endRoundTx(ctx, tx, e.ID, to); err != nil {
				return fmt.Errorf("end the ticket's round: %w", err)
			}
		}
		for _, a := range e.Artifacts {
			if err := s.saveArtifactTx(ctx, tx, e.ID, a.Path, a.Content); err != nil {
				return fmt.Errorf("save artifact %s: %w", a.Path, err)
			}
		}
		return nil
	})
	if err != nil {
		failed := fmt.Sprintf(ops.failed, e.ID, e.Token)
		if e.Kind == EndFail {
			failed += fmt.Sprintf(" (%s)", e.Failure.Kind)
		}
		return "", fmt.Errorf("%s: %w", failed, err)
	}
	if ops.notify {
		s.eng.Notify()
	}
	return to, nil
}

// checkEnding refuses what no transaction should start with.
func (s *Store) checkEnding(e Ending) error {
	switch e.Kind {
	case EndFail:
		if err := checkFailure(e.ID, e.Failure); err != nil {
			return err
		}
	case EndAsk:
		if err := checkAsked(e.ID, e.Asked); err != nil {
			return err
		}
	}
	for _, a := range e.Artifacts {
		if err := checkArtifactPath(e.ID, a.Path); err != nil {
			return err
		}
	}
	return nil
}

// endTx makes e's transition in the write transaction tx.
func (s *Store) endTx(ctx context.Context, tx storedriver.Tx, e Ending) (State, error) {
	switch e.Kind {
	case EndComplete:
		// Nothing follows a complete without artifacts alone in its transaction (the round
		// ends with it: SQL.CompleteEnded).
		return StateDone, s.completeTx(ctx, tx, e.ID, e.Token, e.Result, len(e.Artifacts) == 0)
	case EndFail:
		return s.failTx(ctx, tx, e.ID, e.Token, e.Failure)
	case EndAsk:
		return s.askHumanTx(ctx, tx, e.ID, e.Token, e.Asked)
	case EndNeedBudget:
		return s.needBudgetTx(ctx, tx, e.ID, e.Token, e.Reason, e.Branch, e.ResultDir)
	case EndPark:
		return s.parkTx(ctx, tx, e.ID, e.Token, e.Until, e.Reason)
	default: // EndCancelled
		return StateCancelled, s.finishCancelledTx(ctx, tx, e.ID, e.Token, e.Reason)
	}
}
