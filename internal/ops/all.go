package ops

// All returns a registry with every loci operation.
func All() *Registry {
	r := NewRegistry()
	registerNoteOps(r)
	return r
}
