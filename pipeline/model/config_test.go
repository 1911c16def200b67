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
