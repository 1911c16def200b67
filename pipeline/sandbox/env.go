package sandbox

import (
	"regexp"
	"slices"
	"strings"
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
// output not lost in a buffer at a time-out.
var fixedEnv = []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "NO_COLOR=1", "PY_COLORS=0"}

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

// Parts of variable names that suggest a credential: anywhere in the name, or as a whole
// word between underscores (so GH_PAT and DB_PWD are caught, PATH and PYTHONPATH are not).
var (
	secretInfixes = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "BEARER", "APIKEY", "ACCESSKEY"}
	secretWords   = []string{"KEY", "PAT", "PWD", "PASS", "DSN", "AUTH", "COOKIE", "SESSION", "CERTPASS"}
)

// LooksSecretName reports whether a variable name suggests a credential. PWD and OLDPWD are
// the shell's working directories, not passwords.
func LooksSecretName(name string) bool {
	upper := strings.ToUpper(name)
	if upper == "PWD" || upper == "OLDPWD" {
		return false
	}
	for _, m := range secretInfixes {
		if strings.Contains(upper, m) {
			return true
		}
	}
	for _, w := range strings.FieldsFunc(upper, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		if slices.Contains(secretWords, w) {
			return true
		}
	}
	return false
}

// credentialValue matches the shapes of common keys and tokens: OpenAI/Anthropic sk-...,
// Stripe sk_live_/sk_test_/rk_live_/whsec_..., GitHub ghp_/gho_/github_pat_..., Slack
// xox?-..., AWS AKIA..., Google AIza..., Hugging Face hf_..., npm npm_..., SendGrid SG....,
// GitLab glpat-..., JWTs, "Bearer ..." headers and PEM private keys.
var credentialValue = regexp.MustCompile(`^(sk-[A-Za-z0-9_-]{8,}|(sk|rk)_(live|test)_[A-Za-z0-9]{8,}|whsec_[A-Za-z0-9]{16,}|AIza[A-Za-z0-9_-]{30,}|hf_[A-Za-z0-9]{20,}|npm_[A-Za-z0-9]{20,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|(AKIA|ASIA)[A-Z0-9]{16}|glpat-[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.|(?i:bearer)\s+\S{8,})|-----BEGIN [A-Z ]*PRIVATE KEY-----`)

// LooksSecretValue reports a value shaped like a credential, or a URL with a password
// (postgres://user:pass@host), whose variable name gives no hint.
func LooksSecretValue(value string) bool {
	if credentialValue.MatchString(value) {
		return true
	}
	_, rest, ok := strings.Cut(value, "://")
	if !ok {
		return false
	}
	userinfo, _, ok := strings.Cut(rest, "@")
	return ok && strings.Contains(userinfo, ":") && !strings.ContainsAny(userinfo, "/ ")
}
