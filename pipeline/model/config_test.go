package model

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	valid := func() Config { return testConfig("http://127.0.0.1:1") }
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   []string // substrings of the error; none means valid
	}{
		{name: "valid", mutate: func(*Config) {}},
		{
			name: "undefined endpoint",
			mutate: func(c *Config) {
				c.Roles[RoleMaker] = RoleConfig{Endpoint: "x", Model: "gpt-4.1"}
			},
			want: []string{`models.roles.maker.endpoint: "x" is not defined in models.endpoints`},
		},
		{
			name:   "missing model",
			mutate: func(c *Config) { c.Roles[RoleJudge] = RoleConfig{Endpoint: "local"} },
			want:   []string{"models.roles.judge.model: empty"},
		},
		{
			name:   "missing role",
			mutate: func(c *Config) { delete(c.Roles, RoleChecker) },
			want:   []string{"models.roles.checker: missing"},
		},
		{
			name: "unknown role",
			mutate: func(c *Config) {
				c.Roles["makr"] = RoleConfig{Endpoint: "local", Model: "m"}
			},
			want: []string{"models.roles.makr: unknown role"},
		},
		{
			name: "bad base url and key in config",
			mutate: func(c *Config) {
				c.Endpoints["local"] = Endpoint{BaseURL: "localhost:8080", APIKeyEnv: "sk-abc"}
			},
			want: []string{`models.endpoints.local.base_url: "localhost:8080" is not an http(s) URL`, "models.endpoints.local.api_key_env: holds what looks like a key"},
		},
		{
			name: "bad reasoning effort and negative output",
			mutate: func(c *Config) {
				c.Roles[RoleMaker] = RoleConfig{Endpoint: "local", Model: "o3", ReasoningEffort: "hgih", MaxOutputTokens: -1}
			},
			want: []string{`models.roles.maker.reasoning_effort: "hgih"`, "models.roles.maker.max_output_tokens: -1"},
		},
		{
			name:   "negative price",
			mutate: func(c *Config) { c.Prices = map[string]Price{"m": {Input: -1}} },
			want:   []string{"models.prices.m: prices and max_output must not be negative"},
		},
		{
			name:   "empty config",
			mutate: func(c *Config) { *c = Config{} },
			want:   []string{"models.roles.triage: missing", "models.roles.judge: missing"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mutate(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() =\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestNewNeedsTheNamedKey(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1")
	cfg.Endpoints["local"] = Endpoint{BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "TICKETD_TEST_ABSENT_KEY"}
	t.Setenv("TICKETD_TEST_ABSENT_KEY", "")
	_, err := New(cfg, nil, nil)
	want := "models.endpoints.local.api_key_env: environment variable TICKETD_TEST_ABSENT_KEY is empty or unset"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("New() error = %v, want it to contain %q", err, want)
	}
}

func TestMaxOutput(t *testing.T) {
	tests := []struct {
		role  Role
		model string
		set   int
		want  int
	}{
		{RoleMaker, "gpt-4.1-mini", 0, 32000},  // maker default, under the 32768 limit
		{RoleMaker, "gpt-4o", 0, 16384},        // capped by the model's limit
		{RoleMaker, "unknown-local", 0, 32000}, // limit unknown: not capped
		{RoleMaker, "gpt-4.1", 50000, 32768},   // configured above the limit
		{RoleTriage, "gpt-4.1-nano", 0, 4000},  // other roles default
		{RoleJudge, "gpt-5-mini", 9000, 9000},  // configured
	}
	for _, tt := range tests {
		c := Config{Roles: map[Role]RoleConfig{tt.role: {Model: tt.model, MaxOutputTokens: tt.set}}}
		if got := c.maxOutput(tt.role, tt.model); got != tt.want {
			t.Errorf("maxOutput(%s, %s, configured %d) = %d, want %d", tt.role, tt.model, tt.set, got, tt.want)
		}
	}
}

// TestValidateEveryProblem pins every message Validate can give, in order, for one config
// that breaks every rule at once: the checks are split over helpers, and none may be lost
// or reordered.
func TestValidateEveryProblem(t *testing.T) {
	no := false
	c := Config{
		Endpoints: map[string]Endpoint{
			"a": {
				BaseURL: "ftp://x", Timeout: -1, MaxAnswerBytes: 10, APIKeyEnv: "sk-abc",
				Headers:        map[string]string{"bad name": "v", "Authorization": "Bearer sk-secret123456", "X-Ok": "a\nb", "X-Dup": "v"},
				HeaderEnv:      map[string]string{"bad env": "ENV", "X-Dup": "sk-x", "X-Env": ""},
				Query:          map[string]string{"": "v"},
				ExtraBody:      map[string]any{"model": "m", "f": func() {}},
				MaxTokensField: "max_token",
				PromptCacheKey: &no,
			},
			"b": {MaxAnswerBytes: -1},
		},
		Roles: map[Role]RoleConfig{
			"makr":     {},
			RoleTriage: {Model: " "},
			RoleMaker:  {Endpoint: "c", Model: "m", ReasoningEffort: "hgih", MaxOutputTokens: -1, ContextWindow: -1},
			RoleJudge:  {Endpoint: "a", Model: "m", ContextWindow: 10},
		},
		Prices:           map[string]Price{"m": {MaxOutput: -1}},
		Retry:            RetryConfig{BaseDelay: -1},
		WarmupWait:       -1,
		Breaker:          BreakerConfig{ProbeMax: -1},
		PreflightTimeout: -1,
		PreflightWait:    -1,
	}
	want := []string{
		`models.endpoints.a.base_url: "ftp://x" is not an http(s) URL; write it like https://api.openai.com/v1`,
		`models.endpoints.a.timeout: -1ns is negative; use a duration such as 5m`,
		`models.endpoints.a.max_answer_bytes: must be at least 65536 (64 KiB), got 10; 0 means the default, 4194304`,
		`models.endpoints.a.api_key_env: holds what looks like a key itself; put the key in an environment variable and name the variable here`,
		`models.endpoints.a.headers.Authorization: looks like a secret; name an environment variable under header_env instead`,
		`models.endpoints.a.headers.X-Ok: the value contains a line break`,
		`models.endpoints.a.headers: "bad name" is not a valid header name`,
		`models.endpoints.a.header_env.X-Dup: "sk-x" is not an environment variable name; write the variable's name, never its value`,
		`models.endpoints.a.header_env.X-Dup: also set under headers; keep one`,
		`models.endpoints.a.header_env.X-Env: "" is not an environment variable name; write the variable's name, never its value`,
		`models.endpoints.a.header_env: "bad env" is not a valid header name`,
		`models.endpoints.a.query: an empty parameter name`,
		`models.endpoints.a.extra_body.f: cannot be sent as JSON: json: unsupported type: func()`,
		`models.endpoints.a.extra_body.model: ticketd sets this field itself; use the dedicated setting (max_tokens_field, prompt_cache_key, parallel_tool_calls, models.roles)`,
		`models.endpoints.a.max_tokens_field: "max_token" is not max_completion_tokens, max_tokens or both`,
		`models.endpoints.b.max_answer_bytes: must be at least 65536 (64 KiB), got -1; 0 means the default, 4194304`,
		`models.roles.makr: unknown role`,
		`models.roles.triage.endpoint: empty; name one of models.endpoints (a, b)`,
		`models.roles.triage.model: empty; name the model the endpoint serves, e.g. gpt-4.1-mini`,
		`models.roles.maker.endpoint: "c" is not defined in models.endpoints`,
		`models.roles.maker.reasoning_effort: "hgih" is not one of none, minimal, low, medium, high, xhigh, max`,
		`models.roles.maker.max_output_tokens: -1 is negative`,
		`models.roles.maker.context_window: -1 is negative`,
		`models.roles.checker: missing; every role (triage, maker, checker, judge) needs an endpoint and a model`,
		`models.roles.judge.context_window: 10 tokens is too small to hold a prompt and an answer; give the model's context length, e.g. 32768`,
		`models.prices.m: prices and max_output must not be negative`,
		`models.retry: base_delay and max_delay must not be negative`,
		`models.warmup_wait: -1ns is negative`,
		`models.breaker: probe_base and probe_max must not be negative`,
		`models.preflight_timeout: -1ns is negative`,
		`models.preflight_wait: -1ns is negative; use a duration such as 5m`,
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate() = nil, want every problem")
	}
	got := strings.Split(err.Error(), "\n")
	if len(got) != len(want) {
		t.Fatalf("Validate() gave %d problems, want %d:\n%s", len(got), len(want), err)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
