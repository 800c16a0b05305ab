package cli

import (
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/ops"
)

// writeSettings resolves the write gate and policy of one vault from its
// own config: flags > environment > that vault's config file > the
// surface's default (the CLI's own write commands may write, servers may
// not: an agent gets writes only when the person starting the server says
// so). Flags and environment apply to every vault; --read-only wins.
func (g *globals) writeSettings(cfg *config.File, surfaceDefault bool) (ops.WriteSettings, error) {
	var err error
	w := cfg.Writes
	s := ops.WriteSettings{Enabled: surfaceDefault, ReadOnly: w.ReadOnly, Inbox: w.Inbox, JournalMaxBytes: w.JournalMaxBytes}
	if w.Enabled != nil {
		s.Enabled = *w.Enabled
	}
	if v, set, err := config.EnvBool("LOCI_ENABLE_WRITES"); err != nil {
		return s, err
	} else if set {
		s.Enabled = v
	}
	if g.enableWrites {
		s.Enabled = true
	}
	if v, set, err := config.EnvBool("LOCI_READ_ONLY"); err != nil {
		return s, err
	} else if set {
		s.ReadOnly = v
	}
	if g.readOnly {
		s.ReadOnly = true
	}
	s.WritePaths = append(append([]string{}, w.WritePaths...), config.EnvList("LOCI_WRITE_PATHS")...)
	s.DenyPaths = append(append([]string{}, w.DenyPaths...), config.EnvList("LOCI_DENY_PATHS")...)
	if s.JournalMaxAge, err = config.ParseDuration("writes.journal_max_age", w.JournalMaxAge); err != nil {
		return s, err
	}
	if s.LockTimeout, err = config.ParseDuration("writes.lock_timeout", w.LockTimeout); err != nil {
		return s, err
	}
	return s, nil
}
