package envsetup

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// TestWheelhouses: the folders an offline build's pip installs from are its commands'
// --find-links; without them, PIP_FIND_LINKS and the find-links of pip's configuration,
// which pip reads by itself.
func TestWheelhouses(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"/etc/pip.conf":         "# site\n[global]\ntimeout = 60\nfind-links = /srv/site\n    file:///srv/more\n\n[list]\nfind-links = /srv/not-install\n",
		"/etc/xdg/pip/pip.conf": "[install]\n--find_links: /srv/xdg\nno-index = true\n",
		"/opt/ci/pip.conf":      "[GLOBAL]\nFind-Links=/srv/ci relative/wheels https://example.invalid/w\n",
	}
	read := func(name string) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	env := map[string]string{"PIP_FIND_LINKS": "/srv/env-a  /srv/env-b", "PIP_CONFIG_FILE": "/opt/ci/pip.conf"}
	getenv := func(name string) string { return env[name] }
	install := `"$ENV/bin/pip" install --no-index -e ".[test]"`
	tests := []struct {
		name     string
		recipe   Recipe
		want     string // Dir(From) joined by spaces
		noConfig bool   // no configuration file exists
	}{
		{name: "the commands' own --find-links, nothing else",
			recipe: Recipe{Commands: []string{`PIP_FIND_LINKS=/srv/x ` + install + ` -f /srv/wheels`}, PassEnv: []string{"PIP_FIND_LINKS"}},
			want:   "/srv/wheels(--find-links)"},
		{name: "pip's configuration files",
			recipe: Recipe{Commands: []string{install}},
			want:   "/srv/site(find-links in /etc/pip.conf) /srv/more(find-links in /etc/pip.conf) /srv/xdg(find-links in /etc/xdg/pip/pip.conf)"},
		{name: "PIP_FIND_LINKS set in a command",
			recipe: Recipe{Commands: []string{`export PIP_FIND_LINKS=/srv/inline`, install}},
			want:   "/srv/inline(PIP_FIND_LINKS) /srv/site(find-links in /etc/pip.conf) /srv/more(find-links in /etc/pip.conf) /srv/xdg(find-links in /etc/xdg/pip/pip.conf)"},
		{name: "PIP_FIND_LINKS and PIP_CONFIG_FILE passed from the daemon",
			recipe:   Recipe{Commands: []string{install}, PassEnv: []string{"PIP_FIND_LINKS", "PIP_CONFIG_FILE"}},
			want:     "/srv/env-a(PIP_FIND_LINKS) /srv/env-b(PIP_FIND_LINKS) /srv/ci(find-links in /opt/ci/pip.conf)",
			noConfig: true},
		{name: "the daemon's PIP_FIND_LINKS not passed: the build never sees it",
			recipe:   Recipe{Commands: []string{install}},
			want:     "",
			noConfig: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := read
			if tt.noConfig {
				rd = func(name string) ([]byte, error) {
					if strings.HasPrefix(name, "/etc/") {
						return nil, errors.New("none")
					}
					return read(name)
				}
			}
			var got []string
			for _, w := range tt.recipe.Wheelhouses(getenv, rd) {
				got = append(got, w.Dir+"("+w.From+")")
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("Wheelhouses() = %q\nwant            %q", g, tt.want)
			}
		})
	}
}

// FuzzPipConfigFindLinks: a pip configuration file is the machine's, any bytes: reading it
// never panics and returns only words of the file.
func FuzzPipConfigFindLinks(f *testing.F) {
	f.Add([]byte("[global]\nfind-links = /a\n  /b\n"))
	f.Add([]byte("[install]\n--find_links: file:///c\n[x]\nfind-links=/d"))
	f.Add([]byte("\n\t\n[\n=\n:"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, w := range pipConfigFindLinks(data) {
			if w == "" || !strings.Contains(string(data), w) || slices.Contains(strings.Fields(w), "") {
				t.Fatalf("%q is not a word of the file", w)
			}
		}
	})
}
