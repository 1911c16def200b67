//go:build !unix

package daemon

// lockFile is a no-op where flock is unavailable: a second daemon is then not refused.
func lockFile(path string) (func(), error) { return func() {}, nil }

// lockDatabaseFile is a no-op where flock is unavailable.
func lockDatabaseFile(path string) (func(), string, error) { return func() {}, "", nil }

// processEnded is false where flock is unavailable: there are no locks to wait for.
func processEnded(pid string) bool { return false }
