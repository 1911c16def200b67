package tools

// Known reports whether name is one of the tools a model is offered. A tool name comes from
// model output, so anything keyed by it (a metric label) must fold the rest into one value.
func Known(name string) bool {
	for _, d := range makerDefs {
		if d.name == name {
			return true
		}
	}
	return false
}
