package ops

// All returns a registry with every loci operation.
func All() *Registry {
	r := NewRegistry()
	registerNoteOps(r)
	registerContextOps(r)
	registerGraphOps(r)
	registerTreeOps(r)
	registerFrontmatterOps(r)
	registerLogseqOps(r)
	registerWriteOps(r)
	registerAIOps(r)
	return r
}
