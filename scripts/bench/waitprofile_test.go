package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWaitProfiles(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name       string
		w          waitProfiles
		wantExists []string
	}{
		{"none asked: no file", waitProfiles{}, nil},
		{"block only", waitProfiles{block: filepath.Join(dir, "b1")}, []string{"b1"}},
		{"both", waitProfiles{block: filepath.Join(dir, "b2"), mutex: filepath.Join(dir, "m2")}, []string{"b2", "m2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.w.start()
			var mu sync.Mutex // some contention for the profiles to hold
			n := 0
			var wg sync.WaitGroup
			for i := 0; i < 4; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; j < 100; j++ {
						mu.Lock()
						n++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if n != 400 {
				t.Fatalf("counted %d, want 400", n)
			}
			if err := tt.w.stop(); err != nil {
				t.Fatal(err)
			}
			for _, name := range tt.wantExists {
				if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
					t.Errorf("profile %s: %v (size %v); want a written profile", name, err, st)
				}
			}
		})
	}
	if err := (waitProfiles{block: filepath.Join(dir, "missing", "b")}).stop(); err == nil {
		t.Error("stop into a missing folder: want an error naming the flag")
	}
}
