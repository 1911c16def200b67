package config

import (
	"net/url"
	"os"
	"time"
)

// Notify configures what ticketd tells people without being asked: the morning digest, one
// message per night to a webhook (docs/console.md).
type Notify struct {
	Webhook Webhook `yaml:"webhook"`
}

// Webhook is where the digest is posted: a generic JSON POST whose "text" field a Slack (or
// Mattermost, Discord /slack) incoming webhook shows as is. Its address usually carries a
// secret: set it through url_env, the variable holding it; url is for an address without
// one. Neither set: no digest. ticketd never logs or shows the address.
type Webhook struct {
	URL    string `yaml:"url"`
	URLEnv string `yaml:"url_env"`
	// Timeout bounds one delivery (default 10s); a slow receiver never holds the night.
	Timeout time.Duration `yaml:"timeout"`
}

// DefaultWebhookTimeout bounds a digest delivery.
const DefaultWebhookTimeout = 10 * time.Second

// Address is the webhook's address: url, or the value of url_env ("" for none).
func (w Webhook) Address() string {
	if w.URLEnv != "" {
		return os.Getenv(w.URLEnv)
	}
	return w.URL
}

func (n Notify) validate(bad func(string, ...any)) {
	w := n.Webhook
	if w.URL != "" && w.URLEnv != "" {
		bad("notify.webhook: set url or url_env, not both (url_env names the variable holding an address with a secret)")
	}
	if w.URLEnv != "" && !envName.MatchString(w.URLEnv) {
		bad("notify.webhook.url_env: %q is not an environment variable name (such as TICKETD_WEBHOOK_URL)", w.URLEnv)
	}
	if w.URL != "" {
		// The address is never echoed: it may carry a token.
		u, err := url.Parse(w.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("notify.webhook.url: not an http(s) URL with a host (the value is not shown: it may hold a secret); use https://hooks.example.com/...")
		}
	}
	if w.Timeout < 0 || w.Timeout > 2*time.Minute {
		bad("notify.webhook.timeout: must be 0 (default %s) up to 2m, got %s", DefaultWebhookTimeout, w.Timeout)
	}
}
