//go:build !linux

package worktree

import "errors"

// processes is empty where there is no /proc: RemoveStaleLocks removes nothing there.
type processes []struct{}

func scanProcesses() (processes, error) {
	return nil, errors.New("this system has no /proc to tell which processes hold it")
}

func (processes) holder(string) string { return "" }

func (processes) gitIn([]string) string { return "" }
