package sandbox

import (
	"context"
	"testing"
)

// BenchmarkCommand measures what the sandbox adds to starting one command: run with
// go test -bench Command -run ^$ ./pipeline/sandbox
func BenchmarkCommand(b *testing.B) {
	if _, err := Probe(context.Background(), ""); err != nil {
		b.Skipf("bubblewrap is not usable here: %v", err)
	}
	for _, mode := range Modes {
		b.Run(string(mode), func(b *testing.B) {
			scratch, err := NewScratch(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			s := Spec{Mode: mode, Dir: b.TempDir(), Reports: scratch.Dir, Hide: []string{b.TempDir()}, Env: []string{"PATH=/usr/bin:/bin"}}
			for b.Loop() {
				cmd, err := s.Command(context.Background(), []string{"true"})
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
