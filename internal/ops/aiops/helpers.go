package aiops

import (
	"strings"
)

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// linkName is the wikilink target of a vault path: the path without .md.
func linkName(p string) string { return strings.TrimSuffix(p, ".md") }

// orStr returns s, or def when s is empty.
func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// clamp01 bounds a model's confidence to [0, 1].
func clamp01(f float64) float64 {
	if f < 0 {
		return 0
	}
	if f > 1 {
		return 1
	}
	return f
}

// truncRunes cuts s to n runes, the last one an ellipsis.
func truncRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
