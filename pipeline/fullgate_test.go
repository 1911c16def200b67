package pipeline

import (
	"testing"

	"github.com/ticketd/ticketd/pipeline/discover"
)

// touches finds a unittest id in a touched module however discovery named the module: from
// the root, or from the start folder (typing_extensions runs discovery from src/, so
// src/test_typing_extensions.py's tests are test_typing_extensions.*). A new test there
// that touches missed was no new test to the evidence step.
func TestTouches(t *testing.T) {
	fromSrc := discover.Read(func(string) ([]byte, bool) { return nil, false },
		discover.Options{Unittest: [][]string{{"python3", "-m", "unittest", "discover", "-s", "src", "-t", "src"}}})
	fromRoot := discover.Read(func(string) ([]byte, bool) { return nil, false }, discover.Options{Unittest: [][]string{nil}})
	for _, tt := range []struct {
		name  string
		files []string
		id    string
		tests *discover.Tests
		want  bool
	}{
		{"pytest node id", []string{"tests/test_a.py"}, "tests/test_a.py::test_x", nil, true},
		{"unittest from the root", []string{"tests/test_a.py"}, "tests.test_a.A.test_x", fromRoot, true},
		{"unittest from src/", []string{"src/test_typing_extensions.py"}, "test_typing_extensions.GetOriginalBasesTests.test_plain", fromSrc, true},
		{"another module", []string{"src/test_typing_extensions.py"}, "test_other.T.test_x", fromSrc, false},
		{"a module's name is no prefix of another's", []string{"src/test_a.py"}, "test_ab.T.test_x", fromSrc, false},
		{"outside the start folder", []string{"tests/test_a.py"}, "test_a.T.test_x", fromSrc, false},
	} {
		if got := touches(tt.files, tt.id, tt.tests); got != tt.want {
			t.Errorf("%s: touches(%q, %q) = %v, want %v", tt.name, tt.files, tt.id, got, tt.want)
		}
	}
}
