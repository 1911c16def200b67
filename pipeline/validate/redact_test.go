package validate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// TestCheckOutputRedacted: what a check prints — a token in a remote URL, an extraheader, an
// env dump, a DSN — leaves the runner with the credentials cut out, in the output, the summary
// and the findings, under bwrap and without it (issue 31: they reached the model and the
// database as check output).
func TestCheckOutputRedacted(t *testing.T) {
	requireBwrap(t)
	const token = "ghp_ISSUE31ISSUE31ISSUE31ISSUE31ISSUE31"
	script := `echo "url = https://x-access-token:` + token + `@github.com/acme/app.git"
echo "extraheader = AUTHORIZATION: basic c2VjcmV0LWhlYWRlci12YWx1ZQ=="
echo "GITHUB_TOKEN=` + token + `"
echo "dsn: host=db user=app password=hunter2-31"
exit 1`
	for _, mode := range sandbox.Modes {
		t.Run(string(mode), func(t *testing.T) {
			r := Runner{Sandbox: mode}
			res := r.Run(context.Background(), t.TempDir(), []Check{{Name: "leak", Kind: KindCommand, Command: []string{"sh", "-c", script}, Timeout: time.Minute}})[0]
			all := res.Output + "\n" + res.Summary
			for _, f := range res.Findings {
				all += "\n" + f.Message
			}
			for _, secret := range []string{token, "c2VjcmV0LWhlYWRlci12YWx1ZQ", "hunter2-31"} {
				if strings.Contains(all, secret) {
					t.Errorf("%q left the runner:\n%s", secret, all)
				}
			}
			if !strings.Contains(res.Output, "@github.com/acme/app.git") || !strings.Contains(res.Output, "[redacted]") {
				t.Errorf("the output is not the check's, redacted:\n%s", res.Output)
			}
		})
	}
}
