package pipeline

// importGraphSlot lets one submit at a time build and read an import graph
// (validate.ScanImports): a graph and the scan that builds it are in proportion to the
// repository (about 1 MB kept and 12 MB allocated per 5,000 files), and three workers
// submitting together held three, which made the daemon's peak memory grow with the
// repository times the workers. The wait is at most the other workers' scans (0.2–0.4 s at
// 5,000 files), against checks of seconds.
var importGraphSlot = make(chan struct{}, 1)

// holdImportGraph waits for the slot; release frees it once the graph is no longer read.
func holdImportGraph() (release func()) {
	importGraphSlot <- struct{}{}
	return func() { <-importGraphSlot }
}
