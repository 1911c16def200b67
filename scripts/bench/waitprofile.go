package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// waitProfiles are --block-profile and --mutex-profile: where the daemon's goroutines waited
// on each other during the run (channel and lock waits; contended mutexes), written when the
// bench ends; read them with `go tool pprof -top FILE`.
type waitProfiles struct {
	block, mutex string
}

// start turns the runtime's sampling on for the profiles asked for: every blocking event
// and every contention, since the bench wants where the time went, not a cheap sample.
func (w waitProfiles) start() {
	if w.block != "" {
		runtime.SetBlockProfileRate(1)
	}
	if w.mutex != "" {
		runtime.SetMutexProfileFraction(1)
	}
}

// stop writes the profiles asked for and turns the sampling off.
func (w waitProfiles) stop() error {
	var first error
	for _, p := range []struct{ name, file string }{{"block", w.block}, {"mutex", w.mutex}} {
		if p.file == "" {
			continue
		}
		if err := writeProfile(p.name, p.file); err != nil && first == nil {
			first = err
		}
	}
	if w.block != "" {
		runtime.SetBlockProfileRate(0)
	}
	if w.mutex != "" {
		runtime.SetMutexProfileFraction(0)
	}
	return first
}

func writeProfile(name, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("--%s-profile: %w", name, err)
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("--%s-profile %s: %w", name, file, err)
	}
	return f.Close()
}
