package tools

import (
	"fmt"
	"strings"
	"testing"
)

// The tool descriptions state limits and outcomes to the model; each must be what the code
// does. A limit changed in code without its description fails here.
func TestToolDescriptionsAreTrue(t *testing.T) {
	desc := map[string]string{}
	for _, d := range makerDefs {
		desc[d.name] = d.desc
	}
	tests := []struct {
		tool, want, absent string
	}{
		{ReadFiles, fmt.Sprintf("at most %d KiB", MaxResultBytes>>10), ""},
		{Grep, fmt.Sprintf("at most %d.", MaxGrepMatches), ""},
		{Grep, "RE2", ""},
		{EditFile, "unless replace_all is true", ""},
		// Passing the checks is not the end: the evidence step, the review and the judge may
		// still send the change back (submit.go), so the description may not say it ends there.
		{Submit, "Once the fix is accepted the conversation ends", "If they pass, your work is reviewed and the conversation ends"},
	}
	for _, tt := range tests {
		d := desc[tt.tool]
		if !strings.Contains(d, tt.want) || tt.absent != "" && strings.Contains(d, tt.absent) {
			t.Errorf("%s description:\n%s\nwant it to say %q and not %q", tt.tool, d, tt.want, tt.absent)
		}
	}
}
