package sandbox

import (
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/secret"
)

// allowed reports whether a variable of the daemon's environment may enter a sandbox by
// default: what finds programs and sets the language, and Python's own settings. Everything
// else — API keys under any name (GH_PAT, DB_PWD, SENTRY_DSN, LLM_BEARER...), cloud
// credentials, proxy settings — stays out unless the repository's config passes it by name.
func allowed(name string) bool {
	switch name {
	case "PATH", "LANG", "LANGUAGE", "TZ", "PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV":
		return true
	}
	return strings.HasPrefix(name, "LC_") || strings.HasPrefix(name, "PYTHON")
}

// Fixed settings of every sandboxed command: no bytecode or colour in the worktree's output,
// output not lost in a buffer at a time-out, and Python's fault handler on, so that a
// process stopped at a time-out (SIGABRT) writes where it was.
var fixedEnv = []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "PYTHONFAULTHANDLER=1", "NO_COLOR=1", "PY_COLORS=0"}

// EnvRequest says how to build a sandbox's environment.
type EnvRequest struct {
	// Base is the daemon's environment (os.Environ()).
	Base []string
	// Pass names further variables the repository's config lets through.
	Pass []string
	// Deny names variables that never enter, even when passed: every endpoint's api_key_env.
	Deny []string
	// Set is NAME=value pairs set last.
	Set []string
}

// Env builds the complete environment of a sandboxed command: the allowlisted and passed
// variables of Base, minus the denied names and any value that looks like a credential (a
// second net), then the fixed settings and Set. It also returns the names it dropped although
// they were passed, so the caller can warn.
func Env(req EnvRequest) (env, dropped []string) {
	env = make([]string, 0, 16)
	for _, kv := range req.Base {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		passed := slices.Contains(req.Pass, name)
		if !passed && !allowed(name) {
			continue
		}
		if slices.Contains(req.Deny, name) || (!passed && LooksSecretName(name)) || LooksSecretValue(value) {
			if passed {
				dropped = append(dropped, name)
			}
			continue
		}
		if slices.ContainsFunc(fixedEnv, func(f string) bool { return strings.HasPrefix(f, name+"=") }) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, fixedEnv...)
	return append(env, req.Set...), dropped
}

// LooksSecretName reports whether a variable name suggests a credential (secret.LooksName).
func LooksSecretName(name string) bool { return secret.LooksName(name) }

// LooksSecretValue reports a value shaped like a credential, a URL with a password
// (postgres://user:pass@host) or a DSN carrying one, whose variable name gives no hint
// (secret.LooksValue).
func LooksSecretValue(value string) bool { return secret.LooksValue(value) }
