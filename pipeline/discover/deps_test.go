package discover

import (
	"slices"
	"strings"
	"testing"
)

// Where a repository lists the distribution of a module its tests lack decides how to
// install it: invoke lists pytest-relaxed (imported as pytest_relaxed) in pyproject.toml's
// [dependency-groups] dev, where `pip install -e '.[test]'` never looks.
func TestDependenciesFor(t *testing.T) {
	files := map[string]string{
		"pyproject.toml": `[project]
name = "app"
dependencies = ["PyYAML>=6", "attrs"]

[project.optional-dependencies]
testing = [
  "pytest",  # the runner
  "pytest-timeout>=2",
]

[dependency-groups]
dev = [
  "pytest-relaxed>=2",
  { include-group = "lint" },
]
lint = ["flake8~=7.3.0"]
`,
		"setup.cfg":                  "[metadata]\nname = app\n\n[options.extras_require]\ndocs =\n    sphinx\ntests =\n    freezegun ; python_version >= \"3.8\"\n",
		"tests/requirements.txt":     "-r ../requirements.txt\n# test deps\nicecream>=2.1  # debugging\npython-dotenv\n--index-url https://example.invalid/simple\n",
		"requirements/ci.in":         "Pillow\n",
		"docs/deep/requirements.txt": "furo\n",
		"README.txt":                 "pytest-mock\n",
	}
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	deps := ReadDependencies(reader(files), paths)
	tests := []struct {
		module string
		want   []string // Where + " | " + Install of each declaration
	}{
		{"pytest_relaxed", []string{"pyproject.toml's [dependency-groups] dev | install -e . --group dev"}},
		{"pytest_timeout", []string{"pyproject.toml's [project.optional-dependencies] testing | install -e '.[testing]'"}},
		{"flake8", []string{"pyproject.toml's [dependency-groups] lint | install -e . --group lint"}},
		{"yaml", []string{"pyproject.toml's project dependencies | install -e ."}},
		{"attr", []string{"pyproject.toml's project dependencies | install -e ."}},
		{"freezegun", []string{"setup.cfg's [options.extras_require] tests | install -e '.[tests]'"}},
		{"icecream", []string{"tests/requirements.txt | install -r tests/requirements.txt"}},
		{"dotenv", []string{"tests/requirements.txt | install -r tests/requirements.txt"}},
		{"PIL", []string{"requirements/ci.in | install -r requirements/ci.in"}},
		{"furo", nil},        // two folders down: not read
		{"pytest_mock", nil}, // not a requirements file
		{"pytest_relaxed.trap", nil},
		{"", nil},
		{"include_group", nil},
		{"lint", nil}, // the group dev includes, not a distribution dev lists
	}
	for _, tc := range tests {
		var got []string
		for _, d := range deps.For(tc.module) {
			got = append(got, d.Where()+" | "+d.Install())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("For(%q) = %q, want %q", tc.module, got, tc.want)
		}
	}
	if d := deps.For("freezegun"); len(d) != 1 || !strings.HasPrefix(d[0].Requirement, "freezegun ; python_version") {
		t.Errorf("freezegun's requirement = %+v, want the line as written", d)
	}
}
