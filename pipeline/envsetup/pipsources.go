package envsetup

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"slices"
	"strings"
)

// PipConfigFiles are the pip configuration files every sandboxed build sees: the site-wide
// ones under /etc (the sandbox shows /etc, and hides $HOME and any virtualenv of the host).
var PipConfigFiles = []string{"/etc/pip.conf", "/etc/xdg/pip/pip.conf"}

// maxPipConfig bounds how much of a pip configuration file is read.
const maxPipConfig = 64 << 10

// ReadPipConfig reads a pip configuration file for Wheelhouses: a regular file only (the
// machine's /etc/pip.conf could be anything; a symlink to one is followed), its first
// maxPipConfig bytes.
func ReadPipConfig(name string) ([]byte, error) { return readRegular(os.Stat, name, maxPipConfig) }

// A Wheelhouse is a local folder the recipe's pip installs from, and what names it.
type Wheelhouse struct {
	Dir  string
	From string // "--find-links", "PIP_FIND_LINKS" or "find-links in FILE"
}

// Wheelhouses are the local folders the recipe's pip installs from: those its commands
// name (FindLinks), or else those pip finds by itself, in PIP_FIND_LINKS (set in a command,
// `PIP_FIND_LINKS=DIR pip ...` or `export PIP_FIND_LINKS=DIR`, or passed from the daemon's
// environment through pass_env, read with getenv) and in the find-links of the pip
// configuration files the build sees (PipConfigFiles, or PIP_CONFIG_FILE set the same
// ways; read with readFile). pip ignores a folder in its configuration that is missing and
// installs from the others, so those count only when the commands name none: then they are
// where an offline build's wheels come from. Absolute folders only, as FindLinks.
func (r Recipe) Wheelhouses(getenv func(string) string, readFile func(string) ([]byte, error)) []Wheelhouse {
	var out []Wheelhouse
	add := func(dir, from string) {
		dir = strings.TrimPrefix(strings.Trim(dir, `"'`), "file://")
		if !path.IsAbs(dir) || strings.Contains(dir, "$") {
			return
		}
		dir = path.Clean(dir)
		if !slices.ContainsFunc(out, func(w Wheelhouse) bool { return w.Dir == dir }) {
			out = append(out, Wheelhouse{Dir: dir, From: from})
		}
	}
	for _, dir := range r.FindLinks() {
		add(dir, "--find-links")
	}
	if len(out) > 0 {
		return out
	}
	env := r.commandEnv()
	passed := func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		if slices.Contains(r.PassEnv, name) && getenv != nil {
			return getenv(name)
		}
		return ""
	}
	for _, dir := range strings.Fields(passed("PIP_FIND_LINKS")) {
		add(dir, "PIP_FIND_LINKS")
	}
	files := PipConfigFiles
	if f := passed("PIP_CONFIG_FILE"); f != "" {
		files = append(slices.Clone(files), f)
	}
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			continue
		}
		for _, dir := range pipConfigFindLinks(data) {
			add(dir, "find-links in "+f)
		}
	}
	return out
}

// commandEnv is what the recipe's commands set in their environment by a word of the form
// NAME=VALUE (an assignment before a command, or after export); the last one wins.
func (r Recipe) commandEnv() map[string]string {
	env := map[string]string{}
	for _, c := range r.Commands {
		for _, w := range strings.Fields(c) {
			name, value, ok := strings.Cut(w, "=")
			if ok && (name == "PIP_FIND_LINKS" || name == "PIP_CONFIG_FILE") {
				env[name] = strings.Trim(value, `"'`)
			}
		}
	}
	return env
}

// pipConfigFindLinks reads the find-links of a pip configuration file (an INI file): the
// option in its [global], [install], [download] or [wheel] section, under any of the
// spellings pip takes (find-links, find_links, --find-links), its folders separated by
// white space, on continuation lines too.
func pipConfigFindLinks(data []byte) []string {
	if len(data) > maxPipConfig {
		data = data[:maxPipConfig]
	}
	var out []string
	section, inValue := "", false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4096), maxPipConfig)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || trimmed[0] == '#' || trimmed[0] == ';':
			continue
		case inValue && (line[0] == ' ' || line[0] == '\t'):
			out = append(out, strings.Fields(trimmed)...)
			continue
		}
		inValue = false
		if strings.HasPrefix(trimmed, "[") && strings.HasSuffix(trimmed, "]") {
			section = strings.ToLower(strings.TrimSpace(trimmed[1 : len(trimmed)-1]))
			continue
		}
		key, value, ok := strings.Cut(trimmed, "=")
		if !ok {
			key, value, ok = strings.Cut(trimmed, ":")
		}
		if !ok {
			continue
		}
		key = strings.ReplaceAll(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(key)), "--"), "_", "-")
		if key != "find-links" || !slices.Contains([]string{"global", "install", "download", "wheel"}, section) {
			continue
		}
		out = append(out, strings.Fields(value)...)
		inValue = true
	}
	return out
}
