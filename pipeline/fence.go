package pipeline

import "strings"

// Fence wraps text ticketd did not write (a diff, the maker's summary) in a Markdown code
// fence that the text cannot close: one backtick longer than the longest run of backticks in
// it, and at least three. A fixed ``` fence is closed by any line of the text that is ```
// after up to three spaces, as a diff's context line " ```" of a README is: what follows
// would then render as the report's own Markdown (a heading, a table, an HTML comment that
// hides the rest of the change), and read as the prompt's own framing to a model. info is
// the fence's info string ("diff", "text").
func Fence(info, text string) string {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + info + "\n" + strings.TrimSuffix(text, "\n") + "\n" + f
}
