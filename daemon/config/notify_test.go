package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNotifyWebhook: the webhook's keys are validated with errors that name the key and
// never echo the address (it may hold a secret).
func TestNotifyWebhook(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       string // substring of the error; "" = valid
	}{
		{"unset", "", ""},
		{"url", "notify:\n  webhook:\n    url: https://hooks.example.com/T0/B0/s3cr3t\n", ""},
		{"url_env", "notify:\n  webhook:\n    url_env: TICKETD_WEBHOOK_URL\n    timeout: 5s\n", ""},
		{"not a URL", "notify:\n  webhook:\n    url: hooks.example.com/s3cr3t\n", "notify.webhook.url: not an http(s) URL"},
		{"another scheme", "notify:\n  webhook:\n    url: ftp://hooks.example.com/s3cr3t\n", "notify.webhook.url: not an http(s) URL"},
		{"both", "notify:\n  webhook:\n    url: https://h.example.com/s3cr3t\n    url_env: X\n", "set url or url_env, not both"},
		{"bad env name", "notify:\n  webhook:\n    url_env: \"bad name\"\n", "notify.webhook.url_env"},
		{"timeout", "notify:\n  webhook:\n    url_env: X\n    timeout: 10m\n", "notify.webhook.timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(filepath.Join(t.TempDir(), "config.yaml"), []byte(valid+tt.yaml))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if tt.name == "url_env" && (c.Notify.Webhook.Timeout != 5*time.Second || c.Notify.Webhook.URLEnv != "TICKETD_WEBHOOK_URL") {
					t.Errorf("notify = %+v", c.Notify)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse = %v, want an error with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("the error shows the webhook's address: %v", err)
			}
		})
	}
	t.Setenv("TICKETD_WEBHOOK_URL", "https://hooks.example.com/from-env")
	if got := (Webhook{URLEnv: "TICKETD_WEBHOOK_URL"}).Address(); got != "https://hooks.example.com/from-env" {
		t.Errorf("Address from url_env = %q", got)
	}
}
