package worktree

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/ticketd/ticketd/pipeline/secret"
)

// Push pushes branch from the repository at dir to remoteURL under the same name, without
// force: a branch someone else moved on the remote is an error, never overwritten.
//
// ticketd's git allows no transport at all by default; a push allows exactly the remote's
// own (https, or http/file for a loopback or local remote). token, when set, is sent as
// HTTP basic auth (x-access-token, GitHub's scheme) through http.<remoteURL>.extraHeader in
// command-scope config (GIT_CONFIG_COUNT in the environment), so it is never on a command
// line (visible in ps), in a config file or in an error message, and goes only to remoteURL.
func Push(ctx context.Context, dir, remoteURL, branch, token string) error {
	repo, cfg, env, err := pushSetup(ctx, dir, remoteURL, branch, token)
	if err != nil {
		return err
	}
	ref := "refs/heads/" + branch
	if out, err := repo.gitWith(ctx, cfg, env, "push", "--porcelain", receivePack, "--", remoteURL, ref+":"+ref); err != nil {
		return redact(pushFailure(branch, remoteURL, out, err), token, basicAuth(token))
	}
	return nil
}

// receivePack names the program a push starts for a file remote. Without it git takes
// remote.<name or URL>.receivepack from the repository's config, a shell command line run on
// this machine, which the code under test could write where the git directory is writable
// (sandbox: none); no command-scope setting can reset a key whose name holds the URL, and
// the command line wins over config. Over http(s) the option is not used.
const receivePack = "--receive-pack=git-receive-pack"

// pushSetup opens the repository at dir for a push of branch to remoteURL and returns the
// command-scope config and environment that allow exactly the remote's transport and carry
// token (see Push).
func pushSetup(ctx context.Context, dir, remoteURL, branch, token string) (repoDirs, [][2]string, []string, error) {
	if strings.HasPrefix(remoteURL, "-") || strings.HasPrefix(branch, "-") {
		return repoDirs{}, nil, nil, fmt.Errorf("push %q to %q: remote and branch may not start with a dash", branch, remoteURL)
	}
	scheme := "file"
	if u, err := url.Parse(remoteURL); err == nil && u.Scheme != "" {
		scheme = u.Scheme
	}
	switch scheme {
	case "https", "http", "file":
	default:
		return repoDirs{}, nil, nil, fmt.Errorf("push branch %s to %s: only https (or http/file for local remotes) is supported, not %q", branch, remoteURL, scheme)
	}
	repo, err := openRepo(ctx, dir)
	if err != nil {
		return repoDirs{}, nil, nil, err
	}
	if err := refuseURLRewrites(ctx, repo, remoteURL, branch); err != nil {
		return repoDirs{}, nil, nil, err
	}
	cfg := [][2]string{{"protocol." + scheme + ".allow", "always"}}
	if token != "" {
		cfg = append(cfg, [2]string{"http." + remoteURL + ".extraHeader", "Authorization: Basic " + basicAuth(token)})
	}
	return repo, cfg, []string{"GIT_ALLOW_PROTOCOL=" + scheme}, nil
}

// refuseURLRewrites refuses a push whose URL the repository's config rewrites
// (url.<base>.insteadOf or pushInsteadOf, the longest base that starts the URL): git would
// send the branch to the rewritten URL, which the code under test can set where the git
// directory is writable, and no command-scope setting can reset a key named by its base.
// The token would not follow (its header is keyed by remoteURL), but the fix would be
// published where no one looks.
func refuseURLRewrites(ctx context.Context, repo repoDirs, remoteURL, branch string) error {
	out, err := repo.git(ctx, nil, "config", "-z", "--get-regexp", `^url\..*\.(pushinsteadof|insteadof)$`)
	if err != nil && exitCode(err) != 1 { // 1: no such key
		return fmt.Errorf("push branch %s to %s: read the repository's URL rewrites: %w", branch, remoteURL, err)
	}
	if key, from := urlRewrite(out, remoteURL); key != "" {
		return fmt.Errorf("push branch %s to %s: the repository's config rewrites that URL (%s = %s), so git would push somewhere else; ticketd pushes only to the URL configured: remove the rule (git config --unset '%s'); the next night's start pushes the branch again",
			branch, remoteURL, key, from, key)
	}
	return nil
}

// urlRewrite finds, in `git config -z --get-regexp` output (key, newline, value, NUL), a
// rewrite rule whose value starts url: its key and value, "" when none.
func urlRewrite(out, url string) (key, from string) {
	for _, entry := range strings.Split(out, "\x00") {
		k, v, _ := strings.Cut(entry, "\n")
		if k != "" && strings.HasPrefix(url, v) {
			return k, v
		}
	}
	return "", ""
}

// pushError is a push the remote did not take: its verdict on the branch and what git said.
type pushError struct {
	branch, remote string
	verdict        string // "[rejected] (non-fast-forward)", "" when the remote gave none
	said           string // git's stderr: the remote's own words ("remote: ..."), a transport error
	err            error
}

func (e *pushError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "push branch %s to %s: ", e.branch, e.remote)
	if e.verdict != "" {
		fmt.Fprintf(&b, "the remote refused it: %s", e.verdict)
		if strings.Contains(e.verdict, "non-fast-forward") || strings.Contains(e.verdict, "fetch first") {
			b.WriteString(" (the remote's branch holds commits this one lacks, from an earlier night or someone else; ticketd never force-pushes: compare them, and delete the remote's branch if it is stale)")
		}
		if e.said != "" {
			b.WriteString("; ")
		}
	}
	b.WriteString(e.said)
	if e.verdict == "" && e.said == "" {
		b.WriteString(e.err.Error())
	}
	return b.String()
}

func (e *pushError) Unwrap() error { return e.err }

// pushFailure reads why a push failed: git push --porcelain prints the remote's verdict on
// each ref on stdout ("!<TAB>from:to<TAB>[remote rejected] (pre-receive hook declined)"),
// which git's error (its stderr) lacks.
func pushFailure(branch, remoteURL, stdout string, err error) error {
	e := &pushError{branch: branch, remote: remoteURL, err: err}
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Split(line, "\t"); len(f) == 3 && f[0] == "!" {
			e.verdict = strings.TrimSpace(f[2])
		}
	}
	var ge *gitError
	if errors.As(err, &ge) {
		var said []string
		for _, line := range strings.Split(ge.Stderr, "\n") {
			if line = strings.Join(strings.Fields(line), " "); line != "" && !strings.HasPrefix(line, "hint:") {
				said = append(said, line)
			}
		}
		e.said = strings.Join(said, "; ")
		if len(e.said) > maxPushSaid {
			// A hook may print megabytes; the error goes into notes and the night's record.
			cut := maxPushSaid
			for cut > 0 && !utf8.RuneStart(e.said[cut]) {
				cut--
			}
			e.said = fmt.Sprintf("%s… (%d more bytes)", e.said[:cut], len(e.said)-cut)
		}
	}
	return e
}

// maxPushSaid bounds how much of git's stderr a push error keeps.
const maxPushSaid = 2000

// basicAuth is the HTTP basic credential of token: "user:token" as given, else a token
// alone under GitHub's user name for tokens, x-access-token.
func basicAuth(token string) string {
	if !strings.Contains(token, ":") {
		token = "x-access-token:" + token
	}
	return base64.StdEncoding.EncodeToString([]byte(token))
}

// redact keeps secrets out of an error message, should git ever echo its configuration:
// the ones given, and whatever secret.Redact recognises (a remote URL's credentials).
func redact(err error, secrets ...string) error {
	msg := err.Error()
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, secret.Mask)
		}
	}
	msg = secret.Redact(msg)
	if msg == err.Error() {
		return err
	}
	return fmt.Errorf("%s", msg)
}

// PushToRemote pushes branch to the remote named remote in the repository's own config
// (remote.<name>.url), as Push does: no force; token, when set ("TOKEN" or "USER:TOKEN"),
// goes as HTTP basic auth in a header, never in the URL. ticketd's git runs no credential
// helper, so an https remote needs token (or, not recommended, credentials in its URL).
func PushToRemote(ctx context.Context, dir, remote, branch, token string) error {
	if strings.HasPrefix(remote, "-") {
		return fmt.Errorf("push %q to remote %q: a remote name may not start with a dash", branch, remote)
	}
	repo, err := openRepo(ctx, dir)
	if err != nil {
		return err
	}
	out, err := repo.git(ctx, nil, "config", "--get", "remote."+remote+".url")
	if err != nil {
		return fmt.Errorf("push branch %s: the repository %s has no remote %q (git remote add %s URL): %w", branch, dir, remote, remote, err)
	}
	return Push(ctx, dir, strings.TrimSpace(out), branch, token)
}

// DeleteFromRemote deletes branch from the remote named remote (remote.<name>.url, as
// PushToRemote finds it), but only while the remote's branch points where this repository's
// own branch does (git push --force-with-lease): a branch someone moved since, or one the
// remote no longer has, is left as it is and deleted is false. token is sent as Push sends
// it.
func DeleteFromRemote(ctx context.Context, dir, remote, branch, token string) (deleted bool, err error) {
	if strings.HasPrefix(remote, "-") {
		return false, fmt.Errorf("delete %q from remote %q: a remote name may not start with a dash", branch, remote)
	}
	repo, err := openRepo(ctx, dir)
	if err != nil {
		return false, err
	}
	out, err := repo.git(ctx, nil, "config", "--get", "remote."+remote+".url")
	if err != nil {
		return false, fmt.Errorf("delete branch %s from remote %q: the repository %s has no such remote (git remote add %s URL): %w", branch, remote, dir, remote, err)
	}
	remoteURL := strings.TrimSpace(out)
	repo, cfg, env, err := pushSetup(ctx, dir, remoteURL, branch, token)
	if err != nil {
		return false, err
	}
	ref := "refs/heads/" + branch
	head, err := repo.git(ctx, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return false, fmt.Errorf("delete branch %s from %s: this repository has no such branch to compare the remote's with: %w", branch, remoteURL, err)
	}
	out, err = repo.gitWith(ctx, cfg, env, "push", "--porcelain", receivePack, "--force-with-lease="+ref+":"+strings.TrimSpace(head), "--", remoteURL, ":"+ref)
	if err == nil {
		return true, nil
	}
	failure := pushFailure(branch, remoteURL, out, err)
	if pe, ok := failure.(*pushError); ok && strings.Contains(pe.verdict, "stale info") {
		return false, nil // moved by someone else, or gone already: not ours to delete
	}
	return false, redact(fmt.Errorf("delete branch %s from remote %q: %w", branch, remote, failure), token, basicAuth(token))
}
