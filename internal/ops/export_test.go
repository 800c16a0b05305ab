package ops

import "time"

// SetEmbeddedQueryBudget sets the time budget of a note's embedded queries
// until the returned func restores it.
func SetEmbeddedQueryBudget(d time.Duration) func() {
	old := embeddedQueryBudget
	embeddedQueryBudget = d
	return func() { embeddedQueryBudget = old }
}

// SetSearchCache turns vh's search result cache on or off until the
// returned func restores it.
func SetSearchCache(vh *VaultHandle, on bool) func() {
	old := vh.searchCacheOff
	vh.searchCacheOff = !on
	return func() { vh.searchCacheOff = old }
}

// ResetSearchCache empties vh's search result cache.
func ResetSearchCache(vh *VaultHandle) { vh.searchCache().Reset() }

// SearchCacheStats returns the hits and misses of vh's search result cache.
func SearchCacheStats(vh *VaultHandle) (hits, misses uint64) { return vh.searchCache().Stats() }
