package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Loop guard: the same (tool, arguments, result) seen again and again within a window of
// recent tool calls means the model is going round in circles. At the third sighting the
// tool result carries a nudge (a real model often changes course when told); at the fifth
// the attempt ends with reason "loop", before it spends the rest of its budget.
const (
	loopWindow      = 12
	loopNudgeAt     = 3
	loopStopAt      = 5
	loopStopPrefix  = "loop: "
	loopNudgeFormat = "\n\n[ticketd] Note: this is call number %d of %s with these exact arguments, and the result has not changed. Repeating it will not change it. Use what you already have, or try something different: another file, a narrower grep, an edit, or submit."
)

// loopGuard remembers the hashes of the most recent tool calls.
type loopGuard struct {
	recent []string
}

// observe records one call and says what to do about it: the nudge to append to the result
// ("" for none), or stop=true when the attempt must end.
func (g *loopGuard) observe(tool, args, result string) (nudge string, stop bool, seen int) {
	h := hashCall(tool, args, result)
	g.recent = append(g.recent, h)
	if len(g.recent) > loopWindow {
		g.recent = g.recent[1:]
	}
	for _, x := range g.recent {
		if x == h {
			seen++
		}
	}
	switch {
	case seen >= loopStopAt:
		return "", true, seen
	case seen >= loopNudgeAt:
		return fmt.Sprintf(loopNudgeFormat, seen, tool), false, seen
	}
	return "", false, seen
}

func hashCall(name, args, result string) string {
	h := sha256.New()
	// Arguments that differ only in JSON spacing are the same call.
	for _, s := range []string{name, strings.Join(strings.Fields(args), " "), result} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
