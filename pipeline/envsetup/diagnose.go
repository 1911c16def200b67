package envsetup

import (
	"os"
	"regexp"
	"strings"
)

var (
	noDistribution = regexp.MustCompile(`No matching distribution found for ([^\s]+)`)
	ignoredLinks   = regexp.MustCompile(`Location '([^']+)' is ignored: it is either a non-existing path`)
	permission     = regexp.MustCompile(`Permission denied: '([^']+)'`)
	scmNoVersion   = regexp.MustCompile(`setuptools[-_]scm was unable to detect version`)
	noModule       = regexp.MustCompile(`No module named '([^']+)'`)
	noCompiler     = regexp.MustCompile(`command '[^']*(?:gcc|cc|clang|g\+\+|c\+\+)' failed|(?:gcc|cc|clang): (?:error trying to exec|No such file or directory)|unable to execute '[^']*(?:gcc|cc|clang)'|Python\.h: No such file or directory`)
	noNetwork      = regexp.MustCompile(`Temporary failure in name resolution|Failed to establish a new connection|Network is unreachable|Could not resolve host|NewConnectionError`)
)

// diagnose reads a failed build's output for the usual causes of a failed install and says
// what to do, "" when it recognises none. The names it quotes come from the output, which
// the repository controls: they are cut short and only ever shown to the operator.
func diagnose(output string, network bool) string {
	// pip goes on without a --find-links folder it cannot see, and then finds nothing: the
	// folder is the cause, not the distributions it would have held.
	if m := lastMatch(ignoredLinks, output); m != "" {
		if fi, err := os.Stat(m); err == nil && fi.IsDir() {
			return "pip could not see the wheelhouse " + m + " (--find-links): it exists on this machine, but the recipe runs in the sandbox, " +
				"which shows only the system's folders: add it to sandbox_paths (bound read-only into setup and the checks)"
		}
		return "pip could not see the wheelhouse " + m + " (--find-links): no such folder on this machine either; build it there, " +
			"or name the folder that holds the wheels (and add it to sandbox_paths, since the recipe runs in the sandbox)"
	}
	if scmNoVersion.MatchString(output) {
		// setuptools-scm (hatch-vcs, too) reads the version from git, and the recipe runs in
		// a copy of the base commit's files without .git.
		return "setuptools-scm found no version: the recipe runs in a copy of the base commit without .git, so set one for it, " +
			"e.g. `SETUPTOOLS_SCM_PRETEND_VERSION=0.0 \"$ENV/bin/pip\" install ...` (or export it in an earlier line of the same command)"
	}
	if m := lastMatch(permission, output); m != "" {
		// ticketd as root runs the recipe as the checks' user; wheels that flit or
		// hatchling built are written 0600, readable by root alone.
		return "a command could not read " + m + ": the recipe runs as the checks' user (sandbox_user), not as ticketd's: " +
			"make the wheelhouse readable by everyone (chmod -R a+rX on its folder)"
	}
	if m := lastMatch(noDistribution, output); m != "" {
		what := "add its wheel to the wheelhouse the recipe's --find-links names (`pip download '" + m + "' -d WHEELHOUSE` where an index is reachable)"
		if !network {
			what += ", or let setup reach an index (setup.network: true)"
		}
		if strings.Contains(output, "install build dependencies") {
			return "pip found no distribution of " + m + ", a build dependency (pyproject.toml's [build-system] requires, e.g. a build backend): " + what +
				", or install it into $ENV in an earlier command and pass --no-build-isolation"
		}
		return "pip found no distribution of " + m + ": " + what
	}
	if noCompiler.MatchString(output) {
		return "building a package needs a C compiler and Python's headers: install them on the host (apt-get install build-essential python3-dev), or put a prebuilt wheel of it in the wheelhouse"
	}
	if !network && noNetwork.MatchString(output) {
		return "a command reached for the network, which setup has only with setup.network: true: install from a local wheelhouse (pip install --no-index --find-links DIR), or set network: true"
	}
	if m := lastMatch(noModule, output); m != "" {
		return "Python module " + m + " is missing where the command ran (a build backend with --no-build-isolation?): install the package that provides it into $ENV in an earlier command"
	}
	return ""
}

// lastMatch is re's first group in its last match in s, cut to a sane length.
func lastMatch(re *regexp.Regexp, s string) string {
	all := re.FindAllStringSubmatch(s, -1)
	if len(all) == 0 {
		return ""
	}
	m := all[len(all)-1][1]
	if len(m) > 100 {
		m = m[:100]
	}
	return m
}
