package safefs

// ForceWalk makes every open take the component walk (on: true) or lets
// Linux's openat2 shortcut run again (false), and returns the undo.
func ForceWalk(on bool) (restore func()) {
	old := forceWalk.Load()
	forceWalk.Store(on)
	return func() { forceWalk.Store(old) }
}
