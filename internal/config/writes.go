package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/internal/errs"
)

// Writes is the writes section of the config file (docs/writes.md).
type Writes struct {
	// Enabled turns the write operations on for servers (loci mcp, loci
	// serve); unset, the CLI's own commands may write and servers may not.
	// false also turns the CLI's write commands off.
	Enabled *bool `yaml:"enabled"`
	// ReadOnly refuses every write, whatever else says.
	ReadOnly bool `yaml:"read_only"`
	// WritePaths, when set, are the only globs writes may touch (the
	// highest layer that sets them wins); DenyPaths are never touched (deny
	// wins; every layer's add up).
	WritePaths []string `yaml:"write_paths" check:"glob"`
	DenyPaths  []string `yaml:"deny_paths" check:"glob" merge:"union"`
	// Inbox is capture_note's default folder (default Inbox).
	Inbox string `yaml:"inbox"`
	// JournalMaxBytes and JournalMaxAge bound the undo journal (defaults
	// 100 MiB and 30 days); the age takes Go durations or days ("30d").
	JournalMaxBytes int64  `yaml:"journal_max_bytes" check:"nonneg"`
	JournalMaxAge   string `yaml:"journal_max_age" check:"duration"`
	// LockTimeout bounds the wait for a note's write lock (default 30s).
	LockTimeout string `yaml:"lock_timeout" check:"duration"`
}

// ParseDuration reads a Go duration ("720h", "30s") or a number of days ("30d").
func ParseDuration(name, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseFloat(d, 64); err == nil && n > 0 {
			return time.Duration(n * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, errs.New(errs.CodeInvalidInput, "%s: %q is not a duration (like 720h or 30d)", name, s)
	}
	return d, nil
}
