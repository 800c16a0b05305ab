package ops

// RegisterRemaining registers the families of operations that have no
// room of their own yet.
func RegisterRemaining(r *Registry) {
	registerAIOps(r)
}
