package embed

// SetANNListsPerSqrt sets the number of lists of the approximate indexes
// built from now on to f × √rows (default 2; bench/annbench's -lists).
func SetANNListsPerSqrt(f float64) {
	if f > 0 {
		annListsPerSqrt = f
	}
}
