package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// agentsMD is the AGENTS.md that --agents-md commits to every repository of a round: the
// kind of notes projects give coding agents (about 1.2 KB, some 300 tokens), general enough
// to hold for every case.
const agentsMD = `# Notes for coding agents

This project is a small Python library with its tests beside it.

- Run the tests from the repository root with ` + "`python -m pytest -q`" + `; they need no network and no database.
- Keep the public functions' names and signatures: other services import them.
- Money is handled in integer cents or ` + "`decimal.Decimal`" + `, never in floats.
- Dates and times are timezone-aware; compare them in UTC.
- Every bug fix comes with a regression test next to the existing tests, in their style, named after the behaviour it pins.
- Keep changes small: no reformatting of untouched code, no new dependencies, no renames.
- Docstrings state what a function returns for empty input and at the boundaries.
- Do not edit generated files, vendored code or lock files.
- Comments explain why, not what; remove a comment the fix makes untrue.
- Type hints are welcome on new code but are not enforced.
`

// commitAgentsMD writes agentsMD into repo and commits it, with git isolated from the host's
// configuration, so the round's base commit carries it.
func commitAgentsMD(ctx context.Context, repo string) error {
	if err := os.WriteFile(filepath.Join(repo, "AGENTS.md"), []byte(agentsMD), 0o644); err != nil {
		return fmt.Errorf("write AGENTS.md: %w", err)
	}
	for _, args := range [][]string{
		{"add", "AGENTS.md"},
		{"-c", "user.name=ticketd bench", "-c", "user.email=bench@ticketd.invalid", "-c", "commit.gpgsign=false",
			"commit", "-q", "--no-verify", "-m", "agents notes"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s AGENTS.md: %w: %s", args[len(args)-1], err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
