package dupes

import "testing"

// labelled are pairs of issues of one repository, written as users write them, without
// tracebacks or test ids (those decide before similarity does): dup says whether they
// report one failure. TestSimilarityTable measures the word-set Jaccard on them.
var labelled = []struct {
	dup    bool
	t1, b1 string
	t2, b2 string
}{
	{true, "Export to CSV drops the last row", "Exporting a report to CSV drops the last row of the table.",
		"CSV export drops last row", "When exporting a report to CSV the last row of the table is missing."},
	{true, "Login fails with uppercase email", "Users who type their email in uppercase cannot log in.",
		"Cannot log in when email has capital letters", "If the email has uppercase letters the login fails."},
	{true, "Timezone wrong in daily summary", "The daily summary shows times in UTC instead of the user's timezone.",
		"Daily summary ignores timezone", "Times in the daily summary are UTC, not the user's timezone."},
	{true, "Negative quantity accepted in cart", "The cart accepts a negative quantity and the total goes below zero.",
		"Cart total below zero with negative quantity", "Entering a negative quantity in the cart makes the total negative."},
	{true, "Search ignores accents", "Searching for cafe does not find café.",
		"search does not match accented words", "Search for cafe should find café but returns nothing."},
	{true, "Parser crashes on empty file", "parse_config crashes when the config file is empty.",
		"Empty config file crashes parse_config", "An empty config file makes parse_config crash."},
	{false, "Export to CSV drops the last row", "Exporting a report to CSV drops the last row of the table.",
		"Export to PDF has wrong fonts", "Exporting a report to PDF uses the wrong fonts in the table header."},
	{false, "Login fails with uppercase email", "Users who type their email in uppercase cannot log in.",
		"Password reset email never arrives", "Users who reset their password get no email."},
	{false, "Timezone wrong in daily summary", "The daily summary shows times in UTC instead of the user's timezone.",
		"Weekly summary missing totals", "The weekly summary does not show the totals row."},
	{false, "Negative quantity accepted in cart", "The cart accepts a negative quantity and the total goes below zero.",
		"Cart total rounds wrong", "The cart total rounds 0.125 down instead of up."},
	{false, "Search ignores accents", "Searching for cafe does not find café.",
		"Search is slow on large catalogs", "Searching a catalog of 100k items takes 10 seconds."},
	{false, "Parser crashes on empty file", "parse_config crashes when the config file is empty.",
		"Parser ignores comments at end of file", "parse_config keeps a comment on the last line of the config file as a value."},
}

// TestSimilarityTable prints, per threshold, the labelled pairs linked rightly and wrongly
// (go test ./daemon/dupes -run TestSimilarityTable -v), and holds DefaultSimilarity to no
// wrong link on them: a wrong link closes a report with another bug's fix.
func TestSimilarityTable(t *testing.T) {
	for _, p := range labelled {
		j := Jaccard(Parse(p.t1, p.b1).Words, Parse(p.t2, p.b2).Words)
		t.Logf("dup=%-5v jaccard=%.2f  %q / %q", p.dup, j, p.t1, p.t2)
	}
	t.Logf("threshold  found(of %d dups)  wrong(of %d others)", 6, 6)
	for _, th := range []float64{0.2, 0.3, 0.4, 0.5, 0.6, 0.7} {
		found, wrong := 0, 0
		for _, p := range labelled {
			if Jaccard(Parse(p.t1, p.b1).Words, Parse(p.t2, p.b2).Words) >= th {
				if p.dup {
					found++
				} else {
					wrong++
				}
			}
		}
		t.Logf("%.1f        %d                %d", th, found, wrong)
		if th == DefaultSimilarity && wrong > 0 {
			t.Errorf("threshold %.2f links %d pairs that are different failures", th, wrong)
		}
	}
}
