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
	for _, s := range []string{"https://u:p@h/x", "password=x", "ghp_" + strings.Repeat("a", 30), "extraheader = Authorization: x", "-----BEGIN PRIVATE KEY-----"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Redact(s)
		if again := Redact(got); again != got {
			t.Errorf("Redact(%q) not idempotent: %q then %q", s, got, again)
		}
	})
}
