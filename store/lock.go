package store

import (
	"context"
	"fmt"
)

// Lock names of the work one node at a time may do.
const (
	// LockIntake is held while a node scans its sources and prepares its night (intake,
	// joining the night record, preflights, baselines): nodes do that one after the other.
	LockIntake = "intake"
)

// Lock takes the named lock shared by every process on this database, waiting until it is
// free or ctx ends; unlock releases it, and so does the holder's death (PostgreSQL: an
// advisory lock of the holder's session; SQLite: an flock beside the database file).
func (s *Store) Lock(ctx context.Context, name string) (unlock func(), err error) {
	unlock, err = s.eng.Lock(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("take the %s lock on %s: %w", name, s.Path(), err)
	}
	return unlock, nil
}
