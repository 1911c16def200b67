package config

// Duplicates configures duplicates at intake (docs/night.md): a new ticket that reports the
// same failure as an earlier open one of its repository waits as its duplicate and is
// closed with its fix.
type Duplicates struct {
	// Enabled links duplicates at intake (default true).
	Enabled bool `yaml:"enabled"`
	// Similarity is the word-set Jaccard of title and body at and above which two issues
	// without a traceback or test id that tells them apart are duplicates; 0 links on test
	// ids and traceback frames only. Default 0: issues written from one template ("Surcharge
	// rule 0 ..." and "Surcharge rule 1 ...", different bugs) score 0.89, so text alone
	// never closes a ticket unless the operator opts in; dupes.DefaultSimilarity (0.5) is
	// the measured threshold to opt in with.
	Similarity float64 `yaml:"similarity"`
}

func defaultDuplicates() Duplicates {
	return Duplicates{Enabled: true}
}

func (d Duplicates) validate(bad func(string, ...any)) {
	if !(d.Similarity >= 0 && d.Similarity <= 1) {
		bad("duplicates.similarity: must be 0..1 (0 = on test ids and traceback frames only), got %v", d.Similarity)
	}
}
