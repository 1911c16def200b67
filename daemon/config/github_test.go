package config

import (
	"strings"
	"testing"
)

const ghValid = valid + `
github:
  allow_authors: [alice]
  repos:
    - name: acme/app
      repo: app
http:
  addr: 127.0.0.1:8377
`

func TestGitHubDefaults(t *testing.T) {
	c, err := Parse("cfg.yaml", []byte(ghValid))
	if err != nil {
		t.Fatal(err)
	}
	r := c.GitHub.Repos[0]
	tests := []struct{ name, got, want string }{
		{"label", r.Label, DefaultGitHubLabel},
		{"push_url", r.PushURL, "https://github.com/acme/app.git"},
		{"token_env", c.GitHub.TokenEnv, "GITHUB_TOKEN"},
		{"api_url", c.GitHub.APIURL, DefaultGitHubAPI},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if c.GitHub.Output.Enabled {
		t.Error("github.output.enabled defaults to true; want off")
	}
	ghe, err := Parse("cfg.yaml", []byte(strings.Replace(ghValid, "github:\n", "github:\n  api_url: https://ghe.example.com/api/v3/\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ghe.GitHub.Repos[0].PushURL, "https://ghe.example.com/acme/app.git"; got != want {
		t.Errorf("enterprise push_url: got %q, want %q", got, want)
	}
}

func TestGitHubValidation(t *testing.T) {
	tests := []struct{ name, from, to, want string }{
		{"bad repo name", "name: acme/app", "name: acme", `github.repos[0].name: want OWNER/NAME, got "acme"`},
		{"unknown local repo", "      repo: app\nhttp", "      repo: web\nhttp", `github.repos[0].repo: "web" is not defined`},
		{"public listener", "addr: 127.0.0.1:8377", "addr: 0.0.0.0:8377", `http.addr: "0.0.0.0:8377" is not a loopback address`},
		{"no port", "addr: 127.0.0.1:8377", "addr: 127.0.0.1", "http.addr: want HOST:PORT"},
		{"plain http api", "github:\n", "github:\n  api_url: http://api.example.com/\n", "github.api_url: want an https URL"},
		{"slow watch", "github:\n", "github:\n  watch: 1m\n", "github.watch: must be positive and at most 15s"},
		{"bad login", "[alice]", "[\"al ice\"]", `github.allow_authors[0]: "al ice" is not a GitHub login`},
		{"token env", "github:\n", "github:\n  token_env: \"ghp_abc-123\"\n", "github.token_env: must name an environment variable"},
		{"unknown key", "      repo: app\nhttp", "      repo: app\n      lable: x\nhttp", `unknown key "lable"`},
		{"clear-text push", "      repo: app\nhttp", "      repo: app\n      push_url: http://git.example.com/acme/app.git\nhttp", "would send the token in clear text"},
		{"duplicate", "      repo: app\nhttp", "      repo: app\n    - name: ACME/app\n      repo: app\nhttp", `"ACME/app" is listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.Replace(ghValid, tt.from, tt.to, 1)
			if y == ghValid {
				t.Fatalf("replacement %q not found", tt.from)
			}
			_, err := Parse("cfg.yaml", []byte(y))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("input:\n%s\ngot err %v\nwant it to contain %q", y, err, tt.want)
			}
		})
	}
	// Negative control: loopback http is accepted for tests against a local fake.
	y := strings.Replace(ghValid, "github:\n", "github:\n  api_url: http://127.0.0.1:9999/\n", 1)
	if _, err := Parse("cfg.yaml", []byte(y)); err != nil {
		t.Errorf("loopback api_url rejected: %v", err)
	}
}
