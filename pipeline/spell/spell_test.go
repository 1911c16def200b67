package spell

import "testing"

func TestClosest(t *testing.T) {
	keys := []string{"schedule", "window", "workers", "lease", "heartbeat", "max_attempts", "grace"}
	tests := []struct {
		word  string
		cands []string
		want  string
	}{
		{"wokers", keys, "workers"},
		{"wrokers", keys, "workers"},
		{"Workers", keys, ""}, // the same word in other case is not a typo to suggest
		{"windw", keys, "window"},
		{"max_attempt", keys, "max_attempts"},
		{"hearbeat", keys, "heartbeat"},
		{"colour", keys, ""},
		{"jsn", []string{"text", "json"}, "json"},
		{"xml", []string{"text", "json"}, ""},
		{"makr", []string{"triage", "maker", "checker", "judge"}, "maker"},
		{"", keys, ""},
		{"sched", keys, "schedule"},
	}
	for _, tt := range tests {
		if got := Closest(tt.word, tt.cands); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	if h := Hint("wokers", keys); h != " (did you mean workers?)" {
		t.Errorf("Hint = %q", h)
	}
}

func FuzzClosest(f *testing.F) {
	f.Add("wokers", "workers")
	f.Add("", "")
	f.Add("ü", "u")
	f.Fuzz(func(t *testing.T, word, cand string) {
		got := Closest(word, []string{cand})
		if got != "" && got != cand {
			t.Fatalf("Closest(%q, [%q]) = %q: not a candidate", word, cand, got)
		}
		if d := distance(word, cand); d != distance(cand, word) {
			t.Fatalf("distance is not symmetric for %q, %q", word, cand)
		}
	})
}
