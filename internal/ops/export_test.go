package ops

import "time"

// SetEmbeddedQueryBudget sets the time budget of a note's embedded queries
// until the returned func restores it.
func SetEmbeddedQueryBudget(d time.Duration) func() {
	old := embeddedQueryBudget
	embeddedQueryBudget = d
	return func() { embeddedQueryBudget = old }
}
