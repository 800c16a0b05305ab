//go:build !unix

package index

import "os"

// mapFile is not available here: the cache file is read instead.
func mapFile(*os.File, int) ([]byte, func(), bool) { return nil, nil, false }
