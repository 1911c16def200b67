package config

import (
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// GitHub configures issue intake from GitHub and, when Output.Enabled, pushing fixes back as
// draft pull requests and escalations as comments. Intake is on when Repos is not empty.
type GitHub struct {
	// TokenEnv names the environment variable holding the API token (default GITHUB_TOKEN);
	// the token itself never appears in the file.
	TokenEnv string `yaml:"token_env"`
	// APIURL is the REST API base (default https://api.github.com/); a GitHub Enterprise
	// server's is https://HOST/api/v3/. Plain http is accepted for loopback only (tests).
	APIURL string `yaml:"api_url"`
	// Poll is how often the labelled issues are listed (default 60s). Unchanged pages are
	// answered 304 against their ETag and cost no rate limit.
	Poll time.Duration `yaml:"poll"`
	// Watch is how often the issues of running tickets are re-read so a closed issue or a
	// removed label cancels the work quickly (default 10s; conditional, so free when unchanged).
	Watch time.Duration `yaml:"watch"`
	// MinRateRemaining is the reserve of API calls left untouched: below it, polling pauses
	// until the rate-limit window resets (default 100).
	MinRateRemaining int `yaml:"min_rate_remaining"`
	// AllowAuthors may open tickets even without write access to the repository. Issues by
	// anyone else without write access are ignored: issue text is untrusted and every ticket
	// spends money.
	AllowAuthors []string `yaml:"allow_authors"`
	// Repos are the GitHub repositories to take labelled issues from.
	Repos  []GitHubRepo `yaml:"repos"`
	Output GitHubOutput `yaml:"output"`
	// CI watches the checks of the pull requests ticketd opened (with output enabled).
	CI GitHubCI `yaml:"ci"`
}

// GitHubCI configures the watch of a published pull request's checks: its head commit's
// check runs and statuses are read on later polls (conditional GETs, free when unchanged);
// a red check's failing tests are re-run at the base to tell a break the fix caused (a
// round) from one the base already had (one comment saying so).
type GitHubCI struct {
	// Watch turns the watch on (default true; it needs github.output.enabled).
	Watch bool `yaml:"watch"`
	// StuckAfter is how long after the push a pull request with no check run at all is
	// reported stuck (workflows that never start: default 30m).
	StuckAfter time.Duration `yaml:"stuck_after"`
}

// GitHubRepo maps one GitHub repository to a local repository under repos.
type GitHubRepo struct {
	Name  string `yaml:"name"`  // owner/name on GitHub
	Repo  string `yaml:"repo"`  // key under repos: the local clone fixes are made in
	Label string `yaml:"label"` // issues with this label become tickets (default "ticketd")
	// PushURL is where fix branches are pushed (default https://github.com/OWNER/NAME.git,
	// or the Enterprise host's equivalent).
	PushURL string `yaml:"push_url"`
	// Base is the pull request's base branch (default: the repository's default branch).
	Base string `yaml:"base"`
}

// GitHubOutput turns results into GitHub writes. Off by default: a first night should be
// read in the morning before ticketd is allowed to write anywhere.
type GitHubOutput struct {
	Enabled bool `yaml:"enabled"`
}

// HTTP configures the status listener: /healthz, /metrics and the status page.
type HTTP struct {
	// Addr is host:port on a loopback address ("" = no listener). The page has no
	// authentication, so it is never served on a public interface.
	Addr string `yaml:"addr"`
	// Hosts are further names the page answers to (a proxy's, an SSH tunnel's), as the
	// browser sends them in Host ("status.internal" or "status.internal:8443"). Requests for
	// any other name than the listen address get 421, so a DNS-rebinding page cannot read it.
	Hosts []string `yaml:"hosts"`
	// ReadOnly hides the page's requeue and cancel buttons and refuses their requests; the
	// page then only reads (default false: the buttons are there, behind a per-process
	// token, a same-origin check and the Host check).
	ReadOnly bool `yaml:"read_only"`
}

// GitHub defaults.
const (
	DefaultGitHubAPI      = "https://api.github.com/"
	DefaultGitHubTokenEnv = "GITHUB_TOKEN"
	DefaultGitHubPoll     = 60 * time.Second
	DefaultGitHubWatch    = 10 * time.Second
	DefaultGitHubReserve  = 100
	DefaultGitHubLabel    = "ticketd"
	DefaultCIStuckAfter   = 30 * time.Minute
)

func defaultGitHub() GitHub {
	return GitHub{TokenEnv: DefaultGitHubTokenEnv, APIURL: DefaultGitHubAPI, Poll: DefaultGitHubPoll,
		Watch: DefaultGitHubWatch, MinRateRemaining: DefaultGitHubReserve,
		CI: GitHubCI{Watch: true, StuckAfter: DefaultCIStuckAfter}}
}

var (
	ghRepoRe  = regexp.MustCompile(`^[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$`)
	ghLoginRe = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (c *Config) applyGitHubDefaults() {
	for i := range c.GitHub.Repos {
		r := &c.GitHub.Repos[i]
		if r.Label == "" {
			r.Label = DefaultGitHubLabel
		}
		if r.PushURL == "" && ghRepoRe.MatchString(r.Name) {
			r.PushURL = defaultPushURL(c.GitHub.APIURL, r.Name)
		}
	}
}

// defaultPushURL is the HTTPS clone URL matching the API host: api.github.com pushes to
// github.com, an Enterprise https://HOST/api/v3/ to https://HOST/.
func defaultPushURL(api, name string) string {
	u, err := url.Parse(api)
	if err != nil || u.Host == "" {
		return ""
	}
	host := u.Host
	if host == "api.github.com" {
		host = "github.com"
	}
	return u.Scheme + "://" + host + "/" + name + ".git"
}

// github checks the github and http sections.
func (p *problems) github(c Config) {
	g := c.GitHub
	if len(g.Repos) > 0 || g.Output.Enabled {
		if !envNameRe.MatchString(g.TokenEnv) {
			p.add("github.token_env: must name an environment variable (such as GITHUB_TOKEN), got %q", g.TokenEnv)
		}
	}
	p.githubAPIURL(g.APIURL)
	if g.Poll < time.Second {
		p.add("github.poll: must be at least 1s, got %s", g.Poll)
	}
	if g.CI.StuckAfter < time.Minute || g.CI.StuckAfter > 24*time.Hour {
		p.add("github.ci.stuck_after: must be 1m..24h (how long a pull request may have no check run before it is reported stuck), got %s", g.CI.StuckAfter)
	}
	if g.Watch <= 0 || g.Watch > 15*time.Second {
		p.add("github.watch: must be positive and at most 15s so a closed issue stops spending quickly, got %s", g.Watch)
	}
	if g.MinRateRemaining < 0 {
		p.add("github.min_rate_remaining: must be >= 0, got %d", g.MinRateRemaining)
	}
	for i, a := range g.AllowAuthors {
		if !ghLoginRe.MatchString(a) {
			p.add("github.allow_authors[%d]: %q is not a GitHub login", i, a)
		}
	}
	if g.Output.Enabled && len(g.Repos) == 0 {
		p.add("github.output.enabled: needs at least one entry under github.repos")
	}
	seen := map[string]bool{}
	for i, r := range g.Repos {
		key := strings.ToLower(r.Name)
		p.githubRepo(c, i, r, seen[key])
		seen[key] = true
	}
	p.httpAddr(c.HTTP.Addr)
}

// githubAPIURL checks github.api_url: https (plain http only on loopback), ending in a slash.
func (p *problems) githubAPIURL(raw string) {
	if u, err := url.Parse(raw); err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
		p.add("github.api_url: want an https URL such as %s (plain http only on loopback), got %q", DefaultGitHubAPI, raw)
	} else if !strings.HasSuffix(u.Path, "/") {
		p.add("github.api_url: must end with a slash, got %q", raw)
	}
}

// githubRepo checks github.repos[i]; dup says an earlier entry has the same name.
func (p *problems) githubRepo(c Config, i int, r GitHubRepo, dup bool) {
	if !ghRepoRe.MatchString(r.Name) {
		p.add("github.repos[%d].name: want OWNER/NAME, got %q", i, r.Name)
	}
	if dup {
		p.add("github.repos[%d].name: %q is listed twice", i, r.Name)
	}
	if _, ok := c.Repos[r.Repo]; !ok {
		p.add("github.repos[%d].repo: %q is not defined under repos (have: %s)", i, r.Repo, keys(c.Repos))
	}
	if strings.ContainsAny(r.Label, ",\n") {
		p.add("github.repos[%d].label: %q may not contain a comma or newline", i, r.Label)
	}
	if c.GitHub.Output.Enabled && r.PushURL == "" {
		p.add("github.repos[%d].push_url: required when github.output.enabled (an https clone URL)", i)
	}
	if u, err := url.Parse(r.PushURL); err == nil && u.Scheme == "http" && !isLoopback(u.Hostname()) {
		p.add("github.repos[%d].push_url: %q would send the token in clear text; use https", i, r.PushURL)
	}
	if strings.HasPrefix(r.Base, "-") {
		p.add("github.repos[%d].base: %q is not a branch name", i, r.Base)
	}
}

// httpAddr checks http.addr: the status page has no authentication, so loopback only.
func (p *problems) httpAddr(a string) {
	if a == "" {
		return
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil || port == "" {
		p.add("http.addr: want HOST:PORT such as 127.0.0.1:8377, got %q", a)
	} else if !isLoopback(host) {
		p.add("http.addr: %q is not a loopback address; the status page has no authentication, so serve it on 127.0.0.1 or ::1 (put a proxy in front to share it)", a)
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
