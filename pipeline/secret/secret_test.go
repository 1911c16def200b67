package secret

import (
	"strings"
	"testing"
)

func TestLooksValue(t *testing.T) {
	tests := []struct {
		value string
		want  bool
	}{
		{"sk-proj-abcdefghijklmnop", true}, {"ghp_" + strings.Repeat("a", 36), true},
		{"postgres://app:hunter2@db/prod", true},
		// DSN passwords of issue 31: a query parameter and libpq's keyword form.
		{"postgres://app@db/prod?sslmode=require&password=hunter2", true},
		{"postgresql://db/prod?password=hunter2", true},
		{"host=db port=5432 user=app password=hunter2 dbname=prod", true},
		{"host=db password='hunter 2' dbname=prod", true},
		{"password=hunter2", true},
		{"host=db user=app dbname=prod", false},
		{"postgres://app@db/prod?sslmode=require", false},
		{"/usr/bin:/bin", false}, {"en_US.UTF-8", false}, {"https://example.com/a:b@c", false},
		{"no_password_here", false}, {"", false},
	}
	for _, tt := range tests {
		if got := LooksValue(tt.value); got != tt.want {
			t.Errorf("LooksValue(%q) = %v, want %v", tt.value, got, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	gh := "ghp_" + strings.Repeat("A", 36)
	tests := []struct {
		name, in string
		gone     []string // must not survive
		kept     []string // must survive
	}{
		{"git config with a token URL and an extraheader",
			"[remote \"origin\"]\n\turl = https://x-access-token:" + gh + "@github.com/acme/app.git\n[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46c2VjcmV0\n",
			[]string{gh, "eC1hY2Nlc3MtdG9rZW46c2VjcmV0"}, []string{"github.com/acme/app.git", "[remote \"origin\"]"}},
		{"git -c extraheader on a command line", "git -c http.https://ghe.corp/.extraheader=Authorization: Bearer opaqueopaque push",
			[]string{"opaqueopaque"}, []string{"git -c"}},
		{"a token as the URL's user", "https://" + gh + "@github.com/acme/app.git", []string{gh}, []string{"@github.com/acme/app.git"}},
		{"a password in a URL", "postgres://app:hunter2@db:5432/prod", []string{"hunter2"}, []string{"postgres://app:", "@db:5432/prod"}},
		{"a DSN query password", "dsn=postgres://app@db/prod?sslmode=require&password=hunter2", []string{"hunter2"}, []string{"sslmode=require"}},
		{"a keyword DSN", "connect: host=db user=app password=hunter2 dbname=prod", []string{"hunter2"}, []string{"dbname=prod"}},
		{"an env dump", "GITHUB_TOKEN=" + gh + "\nOPENAI_API_KEY=sk-abcdefghijklmnop\nDB_PASSWORD=opensesame\nPATH=/usr/bin",
			[]string{gh, "sk-abcdefghijklmnop", "opensesame"}, []string{"PATH=/usr/bin", "GITHUB_TOKEN="}},
		{"a token in prose", "the key AKIAABCDEFGHIJKLMNOP leaked", []string{"AKIAABCDEFGHIJKLMNOP"}, []string{"leaked"}},
		{"a PEM key", "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\ny", []string{"MIIEabc"}, []string{"x\n", "\ny"}},
		{"a JSON field", `{"api_key": "abcd1234efgh"}`, []string{"abcd1234efgh"}, []string{`"api_key": "`}},
		// What a check prints must stay readable: paths, node ids, line numbers and code.
		{"pytest output", "tests/test_token.py::test_refresh FAILED\ntests/test_secret.py:123: AssertionError\n    token = make_token(user)\nssh://git@github.com/acme/app.git",
			nil, []string{"tests/test_token.py::test_refresh FAILED", "tests/test_secret.py:123: AssertionError", "token = make_token(user)", "ssh://git@github.com"}},
		// A count of a model's tokens is no credential: ticketd's own report line, a check's output.
		{"token counts", "- model calls: 6 (all attempts); tokens: 46848 prompt (34816 cached), 388 completion\nmax_tokens=4096 prompt_tokens: 707",
			nil, []string{"tokens: 46848 prompt", "max_tokens=4096", "prompt_tokens: 707"}},
		{"a numeric value beside a token or password", "TOKEN=ab12cd34ef\ntoken_password=12345678\nauth_token: 1234abcd",
			[]string{"ab12cd34ef", "12345678", "1234abcd"}, nil},
		{"a long run of digits under a token's name", "API_TOKEN=83472910563748291047", []string{"83472910563748291047"}, nil},
	}
	for _, tt := range tests {
		got := Redact(tt.in)
		for _, g := range tt.gone {
			if strings.Contains(got, g) {
				t.Errorf("%s: %q survived Redact:\n%s", tt.name, g, got)
			}
		}
		for _, k := range tt.kept {
			if !strings.Contains(got, k) {
				t.Errorf("%s: %q was cut by Redact:\n%s", tt.name, k, got)
			}
		}
		if again := Redact(got); again != got {
			t.Errorf("%s: Redact is not idempotent:\n%s\n%s", tt.name, got, again)
		}
	}
}

func FuzzRedact(f *testing.F) {
	for _, s := range append([]string{"https://u:p@h/x", "password=x", "ghp_" + strings.Repeat("a", 30), "extraheader = Authorization: x", "-----BEGIN PRIVATE KEY-----"}, redactCases()...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Redact(s)
		if every := redactEvery(s); got != every {
			t.Errorf("Redact(%q) = %q, every pattern run gives %q", s, got, every)
		}
		if looks, every := LooksValue(s), looksEvery(s); looks != every {
			t.Errorf("LooksValue(%q) = %v, both patterns on it say %v", s, looks, every)
		}
		if again := Redact(got); again != got {
			t.Errorf("Redact(%q) not idempotent: %q then %q", s, got, again)
		}
	})
}

// redactEvery is Redact with every pattern run on every text, as it was before Redact learned
// to skip a pattern on text without a word the pattern needs.
func redactEvery(text string) string {
	if text == "" {
		return text
	}
	text = pemBlock.ReplaceAllString(text, Mask)
	text = headerValue.ReplaceAllString(text, "${1}"+Mask)
	text = urlUserinfo.ReplaceAllStringFunc(text, redactUserinfo)
	text = redactAssignments(text)
	text = keywordPassword.ReplaceAllString(text, "${1}"+Mask)
	return tokenAnywhere.ReplaceAllString(text, Mask)
}

// redactCases are texts for which Redact must do exactly what redactEvery does: one per
// pattern and token shape, each in lower, upper and mixed case, the two non-ASCII letters
// (?i) folds onto ASCII (the Kelvin sign for k, the long s for s), and plain check output.
func redactCases() []string {
	gh := "ghp_" + strings.Repeat("A", 36)
	base := []string{
		"extraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46c2VjcmV0",
		"Proxy-Authorization: Basic abcdef", "X-Api-Key: abcdefgh", "api-key=abcdefgh", "PRIVATE-TOKEN: glpat-abcdefghijklmnopqrst",
		"Cookie: session=abcdef", "set cookie: x",
		"https://x-access-token:" + gh + "@github.com/acme/app.git", "postgres://app:hunter2@db:5432/prod",
		"DB_PASSWORD=opensesame", "db_passwd: 'opensesame'", `{"client_secret": "abcd1234efgh"}`, "AUTH_TOKEN=ab12cd34ef",
		"api_key=abcd1234", "ACCESS-KEY: abcd1234", "private_key=abcd1234", "Credentials=abcd1234",
		"host=db user=app password=hunter2", "?sslmode=require&pwd=hunter2", " SSLPASSWORD=hunter2",
		"sk-abcdefghijklmnop", "sk_live_abcdefgh1234", "rk_test_abcdefgh1234", "whsec_abcdefghijklmnop1234",
		"AIza" + strings.Repeat("b", 35), "hf_" + strings.Repeat("c", 24), "npm_" + strings.Repeat("d", 24),
		"SG." + strings.Repeat("e", 20) + "." + strings.Repeat("f", 20), gh, "gho_" + strings.Repeat("g", 24),
		"ghu_" + strings.Repeat("g", 24), "ghs_" + strings.Repeat("g", 24), "ghr_" + strings.Repeat("g", 24),
		"github_pat_" + strings.Repeat("h", 24), "xoxb-1234567890-abc", "AKIAABCDEFGHIJKLMNOP", "ASIAABCDEFGHIJKLMNOP",
		"glpat-" + strings.Repeat("i", 24), "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.abc", "Authorization: Bearer abcdefgh12345678",
		"bearer abcdefgh12345678", "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
		"tests/test_token.py::test_refresh FAILED\n    token = make_token(user)\nssh://git@github.com/acme/app.git",
		"collected 12 items\n\ntests/test_billing.py ....F.......  [100%]\nE   AssertionError: assert 1 == 2",
		"tokens: 46848 prompt (34816 cached)\nmax_tokens=4096 prompt_tokens: 707", "",
	}
	var out []string
	for _, s := range base {
		out = append(out, s, strings.ToUpper(s), strings.ToLower(s), strings.ToTitle(s))
	}
	return append(out,
		"\u212Aey=abcd1234", "api_\u212Aey: abcd1234", "coo\u212Aie: abcdef", "\u017Fecret=abcd1234", "pa\u017F\u017Fword=hunter2",
		"TO\u212AEN=ab12cd34ef", "\u017F\u017Flpassword=hunter2", "x-api-\u212Aey: abcdef", "Bearer\u00a0abcdefgh12345678 é",
	)
}

// TestRedactSkipsOnlyWhatCannotMatch: a pattern skipped on a text (no word it needs there)
// changes nothing: Redact does what running every pattern does.
func TestRedactSkipsOnlyWhatCannotMatch(t *testing.T) {
	for _, in := range redactCases() {
		if got, want := Redact(in), redactEvery(in); got != want {
			t.Errorf("Redact(%q) = %q, every pattern run gives %q", in, got, want)
		}
	}
}

// TestMayHold: only ASCII text without any of the words is passed over.
func TestMayHold(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"collected 12 items", false},
		{"COOKIE: x", true},
		{"a Cookie jar", true},
		{"coo\u212Aie", true}, // the Kelvin sign folds onto k
		{"caf\u00e9", true},   // not ASCII: not judged
	} {
		var l lowered
		if got := l.mayHold(tt.text, "cookie", "token"); got != tt.want {
			t.Errorf("mayHold(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// TestLooksValueSkipsOnlyWhatCannotMatch: LooksValue answers what running both of its
// patterns on every value answers.
func TestLooksValueSkipsOnlyWhatCannotMatch(t *testing.T) {
	values := append(redactCases(), "host=db pa\u017F\u017Fword=x", "PWD=x", "a pwd=x", "\u212Aey", "BEARER abcdefgh12345678",
		"x -----BEGIN EC PRIVATE KEY-----", "/usr/local/bin:/usr/bin", "sk-", "password = hunter2")
	for _, v := range values {
		if got, want := LooksValue(v), looksEvery(v); got != want {
			t.Errorf("LooksValue(%q) = %v, both patterns on it say %v", v, got, want)
		}
	}
}

// looksEvery is LooksValue with both patterns run on every value.
func looksEvery(v string) bool {
	if credentialValue.MatchString(v) || dsnPassword.MatchString(v) {
		return true
	}
	_, rest, ok := strings.Cut(v, "://")
	if !ok {
		return false
	}
	userinfo, _, ok := strings.Cut(rest, "@")
	return ok && strings.Contains(userinfo, ":") && !strings.ContainsAny(userinfo, "/ ")
}

// BenchmarkRedact: a pytest failure's output (about 5 KB) through Redact, and through every
// pattern as before: go test -run '^$' -bench Redact ./pipeline/secret
func BenchmarkRedact(b *testing.B) {
	out := strings.Repeat(`============================= test session starts ==============================
platform linux -- Python 3.11.2, pytest-7.2.1, pluggy-1.0.0
rootdir: /work/repo, configfile: pyproject.toml
collected 12 items

tests/test_billing.py ....F.......                                          [100%]

=================================== FAILURES ===================================
____________________________ test_half_cent_rounds ____________________________
    def test_half_cent_rounds():
>       assert round_cents(Decimal("0.005")) == Decimal("0.01")
E       AssertionError: assert Decimal('0.00') == Decimal('0.01')
tests/test_billing.py:42: AssertionError
`, 8)
	for _, f := range []struct {
		name   string
		redact func(string) string
	}{{"Redact", Redact}, {"every-pattern", redactEvery}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				f.redact(out)
			}
		})
	}
}
