package pipeline

import (
	"maps"
	"testing"
)

// Doctest text is read by the scope whose docstring holds it, so that an edit is pinned to
// the doctests it touches; and a pytest doctest id names its scope.
func TestDoctestTexts(t *testing.T) {
	src := `"""Calculator.

>>> 1 + 1
2
"""


def add(a, b):
    """Add.

    >>> add(2, 2)
    4
    >>> add(
    ...     1, 2)
    3

    Not an example.
    """
    return a + b


class Box:
    def size(self):
        """
        >>> Box().size()
        0
        """
        return 0


async def later():
    pass
`
	want := map[string]string{
		"":         ">>> 1 + 1\n2\n",
		"add":      ">>> add(2, 2)\n4\n>>> add(\n...     1, 2)\n3\n",
		"Box.size": ">>> Box().size()\n0\n",
	}
	if got := doctestTexts([]byte(src)); !maps.Equal(got, want) {
		t.Errorf("doctestTexts:\n%q\nwant\n%q", got, want)
	}
	edited := map[string][]string{"pkg/calc.py": {"add", ""}, "box.py": {"Box.size"}}
	for id, want := range map[string]bool{
		"pkg/calc.py::pkg.calc.add": true, "pkg/calc.py::calc.add": true, "pkg/calc.py::pkg.calc": true,
		"pkg/calc.py::pkg.calc.sub": false, "box.py::box.Box.size": true, "box.py::box.Box": false,
		"calc.py::calc.add": false, "test_calc.py::test_add": false,
	} {
		if got := isEditedDoctest(edited, id); got != want {
			t.Errorf("isEditedDoctest(%q) = %v, want %v", id, got, want)
		}
	}
}
