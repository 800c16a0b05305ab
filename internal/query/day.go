package query

import (
	"strconv"
	"strings"
	"time"
)

// RelativeDay reads a day as people write one in a query or a filter:
// today (or now), tomorrow, yesterday, a signed offset from today in days,
// weeks, months or years (-7d, +2w, 3m, 1y; at most 100,000), or a date
// (2006-01-02, 20060102, 2006_01_02). The day is midnight UTC of the
// calendar day in now's location; false for anything else.
func RelativeDay(s string, now time.Time) (time.Time, bool) {
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "today", "now":
		return today, true
	case "yesterday":
		return today.AddDate(0, 0, -1), true
	case "tomorrow":
		return today.AddDate(0, 0, 1), true
	}
	if len(s) >= 2 && len(s) <= 8 {
		n, err := strconv.Atoi(strings.TrimPrefix(s[:len(s)-1], "+"))
		if err == nil && n > -100000 && n < 100000 {
			switch s[len(s)-1] {
			case 'd':
				return today.AddDate(0, 0, n), true
			case 'w':
				return today.AddDate(0, 0, 7*n), true
			case 'm':
				return today.AddDate(0, n, 0), true
			case 'y':
				return today.AddDate(n, 0, 0), true
			}
		}
	}
	for _, layout := range []string{"2006-01-02", "20060102", "2006_01_02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
