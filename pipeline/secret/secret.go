// Package secret recognises credentials — in variable names, in values and inside free text —
// so that one set of rules decides what never enters a sandbox (sandbox.Env) and what is cut
// out of text before it leaves one (check output on its way to the model, the database,
// reports, pull request bodies and logs).
package secret

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Mask replaces every credential Redact finds.
const Mask = "[redacted]"

// Parts of variable names that suggest a credential: anywhere in the name, or as a whole
// word between underscores (so GH_PAT and DB_PWD are caught, PATH and PYTHONPATH are not).
var (
	nameInfixes = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "BEARER", "APIKEY", "ACCESSKEY"}
	nameWords   = []string{"KEY", "PAT", "PWD", "PASS", "DSN", "AUTH", "COOKIE", "SESSION", "CERTPASS"}
)

// LooksName reports whether a variable name suggests a credential. PWD and OLDPWD are the
// shell's working directories, not passwords.
func LooksName(name string) bool {
	upper := strings.ToUpper(name)
	if upper == "PWD" || upper == "OLDPWD" {
		return false
	}
	for _, m := range nameInfixes {
		if strings.Contains(upper, m) {
			return true
		}
	}
	for _, w := range strings.FieldsFunc(upper, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		if slices.Contains(nameWords, w) {
			return true
		}
	}
	return false
}

// tokenShapes are the shapes of common keys and tokens: OpenAI/Anthropic sk-..., Stripe
// sk_live_/sk_test_/rk_live_/whsec_..., GitHub ghp_/gho_/ghs_/github_pat_..., Slack xox?-...,
// AWS AKIA..., Google AIza..., Hugging Face hf_..., npm npm_..., SendGrid SG...., GitLab
// glpat-..., JWTs and "Bearer ..." values.
const tokenShapes = `sk-[A-Za-z0-9_-]{8,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{8,}|whsec_[A-Za-z0-9]{16,}|AIza[A-Za-z0-9_-]{30,}|hf_[A-Za-z0-9]{20,}|npm_[A-Za-z0-9]{20,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[A-Z0-9]{16}|glpat-[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`

var (
	// credentialValue matches a value that starts like a credential.
	credentialValue = regexp.MustCompile(`^(?:` + tokenShapes + `|(?i:bearer)\s+\S{8,})|-----BEGIN [A-Z ]*PRIVATE KEY-----`)
	// dsnPassword finds a password in a keyword DSN ("host=db password=hunter2") or a URL's
	// query ("?sslmode=require&password=hunter2"), quoted or not.
	dsnPassword = regexp.MustCompile(`(?i)(?:^|[\s?&;])(?:password|passwd|pwd|sslpassword)\s*=\s*(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&;'"]+)`)
)

// LooksValue reports a value shaped like a credential: a known token shape, a URL with a
// password (postgres://user:pass@host), or a DSN carrying one (?password=..., keyword
// DSNs such as "host=db password=...").
//
// As in Redact, a pattern runs only on a value holding a word it needs: every sandboxed
// command asks this of every variable of its environment.
func LooksValue(value string) bool {
	var l lowered
	if (containsAny(value, tokenLiterals) || strings.Contains(value, "-----BEGIN ") || l.mayHold(value, "bearer")) &&
		credentialValue.MatchString(value) {
		return true
	}
	if strings.Contains(value, "=") && l.mayHold(value, "passw", "pwd") && dsnPassword.MatchString(value) {
		return true
	}
	_, rest, ok := strings.Cut(value, "://")
	if !ok {
		return false
	}
	userinfo, _, ok := strings.Cut(rest, "@")
	return ok && strings.Contains(userinfo, ":") && !strings.ContainsAny(userinfo, "/ ")
}

// The patterns Redact cuts out of text, each with the part to keep before the secret.
var (
	// urlUserinfo is the userinfo of a URL: user:password@ or token@.
	urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^\s/?#@"'<>]+)@`)
	// headerValue is an HTTP credential header's value, as git config (extraheader), curl -H
	// or a log prints it, up to the end of the line.
	headerValue = regexp.MustCompile(`(?i)(\b(?:[\w.*:/-]*extraheader|authorization|proxy-authorization|x-api-key|api-key|private-token|cookie)\s*[=:]\s*)([^\r\n]+)`)
	// assignment is NAME=value or "name": "value" where the name says it holds a secret.
	// The name has no dot, so "test_token.py:12:" (a path and a line) is not one.
	assignment = regexp.MustCompile(`(?i)(\b[\w-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)[\w-]*["']?\s*[=:]\s*["']?)([^\s"',;&()\[\]{}<>]{4,})`)
	// keywordPassword is a DSN's password keyword, also in a URL's query.
	keywordPassword = regexp.MustCompile(`(?i)((?:^|[\s?&;])(?:pwd|sslpassword)\s*=\s*)([^\s&;'"]+)`)
	tokenAnywhere   = regexp.MustCompile(`\b(?:` + tokenShapes + `)|(?i:\bbearer)\s+[A-Za-z0-9._~+/=-]{8,}`)
	pemBlock        = regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\z)`)
)

// Redact returns text with the credentials it can recognise replaced by Mask: the password
// (or the token standing as a user name) in a URL's userinfo, the value of an extraheader,
// Authorization or Cookie header, the value of a NAME=value or "name": value pair whose name
// says it is a secret, DSN passwords, token-shaped strings (ghp_..., sk-..., AKIA..., JWTs,
// Bearer ...) and PEM private keys. It keeps the rest, so output stays readable; it is a net
// for what a check prints, not a proof that nothing secret remains.
//
// Each pattern runs only where text holds a word it cannot match without (mayHold): most of
// what checks print holds none of them, and the patterns scan at a few MB/s (under a tenth
// of that with the race detector), so a check's output of some kilobytes took milliseconds
// of CPU every time it was redacted.
func Redact(text string) string {
	if text == "" {
		return text
	}
	var l lowered
	if strings.Contains(text, "-----BEGIN ") {
		text = pemBlock.ReplaceAllString(text, Mask)
	}
	if l.mayHold(text, "extraheader", "authorization", "api-key", "private-token", "cookie") {
		text = headerValue.ReplaceAllString(text, "${1}"+Mask)
	}
	if strings.Contains(text, "://") {
		text = urlUserinfo.ReplaceAllStringFunc(text, redactUserinfo)
	}
	if l.mayHold(text, "passw", "secret", "token", "key", "credential") {
		text = redactAssignments(text)
	}
	if strings.Contains(text, "=") && l.mayHold(text, "pwd", "sslpassword") {
		text = keywordPassword.ReplaceAllString(text, "${1}"+Mask)
	}
	if containsAny(text, tokenLiterals) || l.mayHold(text, "bearer") {
		text = tokenAnywhere.ReplaceAllString(text, Mask)
	}
	return text
}

// tokenLiterals are what each of tokenShapes starts with or holds, as it is spelled (they are
// case-sensitive): a text holding none of them and no "bearer" has nothing tokenAnywhere
// matches.
var tokenLiterals = []string{
	"sk-", "k_live_", "k_test_", "whsec_", "AIza", "hf_", "npm_", "SG.",
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "AKIA", "ASIA", "glpat-", "eyJ",
}

func containsAny(text string, subs []string) bool {
	for _, s := range subs {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// lowered is the ASCII lower case of the last text mayHold saw, kept while the text is the
// same.
type lowered struct {
	text, lower string
	ascii, set  bool
}

// mayHold reports whether text may hold one of words (lower-case ASCII) under a
// case-insensitive pattern: false only when text is ASCII and its lower case holds none of
// them. Text with any other byte always may: under (?i) a pattern's k matches the Kelvin sign
// (U+212A) and its s the long s (U+017F), which no ASCII lower-casing finds.
func (l *lowered) mayHold(text string, words ...string) bool {
	if !l.set || l.text != text {
		l.text, l.ascii, l.set = text, true, true
		for i := 0; i < len(text); i++ {
			if text[i] >= utf8.RuneSelf {
				l.ascii = false
				break
			}
		}
		l.lower = ""
		if l.ascii {
			l.lower = strings.ToLower(text)
		}
	}
	return !l.ascii || containsAny(l.lower, words)
}

// redactUserinfo masks the password of scheme://user:password@, and the whole userinfo
// when it has no password but looks like a token (https://ghp_...@github.com); a plain
// user name (ssh://git@host) stays.
func redactUserinfo(m string) string {
	sub := urlUserinfo.FindStringSubmatch(m)
	scheme, info := sub[1], sub[2]
	if user, _, ok := strings.Cut(info, ":"); ok {
		if LooksValue(user) || len(user) >= 20 {
			user = Mask
		}
		return scheme + user + ":" + Mask + "@"
	}
	if LooksValue(info) || len(info) >= 20 {
		return scheme + Mask + "@"
	}
	return m
}

// redactAssignments masks the values of secret-named assignments, except a call
// (token = make_token(user) in a traceback is code, not a secret), a value already masked and
// a count of a model's tokens (tokenCount).
func redactAssignments(text string) string {
	var b strings.Builder
	last := 0
	for _, m := range assignment.FindAllStringSubmatchIndex(text, -1) {
		vs, ve := m[4], m[5]
		if ve < len(text) && text[ve] == '(' || strings.HasPrefix(text[vs:], "[redacted") || text[vs:ve] == Mask ||
			tokenCount(text[m[2]:m[3]], text[vs:ve]) {
			continue
		}
		b.WriteString(text[last:vs])
		b.WriteString(Mask)
		last = ve
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// tokenCount reports whether name (the assignment's text up to its value) names tokens only
// in the sense of a model's tokens, and value is a number: "tokens: 46848 prompt" in a
// report, max_tokens=4096 or prompt_tokens: 707 in a check's output. No credential is a bare
// decimal number under such a name; a password, secret or key named beside it still is one.
func tokenCount(name, value string) bool {
	lower := strings.ToLower(name)
	for _, w := range []string{"password", "passwd", "secret", "key", "credential"} {
		if strings.Contains(lower, w) {
			return false
		}
	}
	return strings.Contains(lower, "token") && len(value) <= maxTokenCountDigits && strings.Trim(value, "0123456789") == ""
}

// maxTokenCountDigits bounds a count of tokens: a longer run of digits under a token's name
// may be a numeric credential.
const maxTokenCountDigits = 10
