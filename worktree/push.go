package worktree

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
)

// Push pushes branch from the repository at dir to remoteURL under the same name, without
// force: a branch someone else moved on the remote is an error, never overwritten. token,
// when set, is sent as HTTP basic auth (x-access-token, GitHub's scheme) through an
// http.<remoteURL>.extraHeader given in the environment (GIT_CONFIG_COUNT), so it is never
// on a command line (visible in ps), in a config file or in an error message, and is sent
// only to remoteURL.
func Push(ctx context.Context, dir, remoteURL, branch, token string) error {
	if strings.HasPrefix(remoteURL, "-") || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("push %q to %q: remote and branch may not start with a dash", branch, remoteURL)
	}
	var env []string
	if token != "" {
		auth := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
		env = []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http." + remoteURL + ".extraHeader",
			"GIT_CONFIG_VALUE_0=Authorization: Basic " + auth}
	}
	ref := "refs/heads/" + branch
	if _, err := runGit(ctx, dir, env, "push", "--porcelain", "--", remoteURL, ref+":"+ref); err != nil {
		return fmt.Errorf("push branch %s to %s: %w", branch, remoteURL, err)
	}
	return nil
}
