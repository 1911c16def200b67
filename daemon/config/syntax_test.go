package config

import (
	"strings"
	"testing"
)

// TestSyntaxErrorsNameTheLine: a YAML mistake is reported at the line that holds it, in
// words an operator reads, not at the line where the parser noticed it in its own words (a
// missing colon at line 48 came out as line 13, "could not find expected ':'").
func TestSyntaxErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // the error holds each
	}{
		{"key without colon", "store:\n  path: x.db\nnight:\n  workers: 2\n  window 6h\n  lease: 60s\n",
			[]string{"config.yaml:5:", "a key without its colon", `"window 6h"`}},
		{"key and quoted value without colon", "night:\n  schedule \"0 1 * * *\"\n  workers: 2\n",
			[]string{"config.yaml:2:", "a key without its colon"}},
		{"missing colon after comments", "# a\n# b\nnight:\n  # workers\n  workers: 2\n  # window\n  window 6h\n  # lease\n  lease: 60s\n",
			[]string{"config.yaml:7:", "a key without its colon"}},
		{"missing colon in a list item", "repos:\n  app:\n    path: /x\n    checks:\n      - kind: pytest\n        command [python3, -m, pytest]\n      - kind: ruff\n",
			[]string{"config.yaml:6:", "a key without its colon"}},
		{"tab", "store:\n\tpath: x.db\n", []string{"config.yaml:2:", "a tab in the indentation"}},
		{"unclosed quote", "store:\n  path: \"x.db\nnight:\n  workers: 2\n", []string{"config.yaml:2:", "quoted value is not closed"}},
		{"unclosed list", "intake: [{kind: dir, path: issues}\nnight:\n  workers: 2\n", []string{"config.yaml:1:", "list in [ ] is not closed"}},
		{"colon in a value", "models:\n  endpoints:\n    s: {base_url: \"http://x\"}\n  roles:\n    triage: {endpoint: s, model: m}\n    maker {endpoint: s, model: m}\n",
			[]string{"config.yaml:6:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("config.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("parsed without an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "could not find expected") || strings.Contains(err.Error(), "not allowed in this context") {
				t.Errorf("error %q is in the parser's words", err)
			}
		})
	}
}

// TestEveryMistakeAtOnce: a file with several mistakes reports each, the values of the
// wrong type with the values out of range, each at its line.
func TestEveryMistakeAtOnce(t *testing.T) {
	yaml := "night:\n  workers: two\n  max_attempts: 99\n  lease: soon\nlog:\n  format: xml\nbudget:\n  max_steps: 0\n"
	_, err := Parse("config.yaml", []byte(yaml))
	if err == nil {
		t.Fatal("parsed without an error")
	}
	for _, w := range []string{
		"config.yaml:2: night.workers: want a whole number",
		"config.yaml:3: night.max_attempts: must be 1..20, got 99",
		"config.yaml:4: night.lease: want a duration",
		"config.yaml:6: log.format: must be text or json",
		"config.yaml:8: budget.max_steps: must be >= 1",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}
