package cli

import (
	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/ops"
)

// writeSettings resolves the write gate and policy of one vault from its
// resolved configuration (flags > environment > the user's file > that
// vault's own file > the surface's default: the CLI's own write commands
// may write, servers may not). A vault's own writes.enabled: true is not
// honoured (internal/config): an agent gets writes only when the person
// starting the server says so. Flags, environment and the user's file
// apply to every vault; read-only wins.
func (g *globals) writeSettings(cfg *config.Config, surfaceDefault bool) (ops.WriteSettings, error) {
	var err error
	w := cfg.Writes
	s := ops.WriteSettings{Enabled: surfaceDefault, ReadOnly: w.ReadOnly, Inbox: w.Inbox, JournalMaxBytes: w.JournalMaxBytes,
		WritePaths: append([]string{}, w.WritePaths...), DenyPaths: append([]string{}, w.DenyPaths...)}
	if w.Enabled != nil {
		s.Enabled = *w.Enabled
	}
	if s.JournalMaxAge, err = config.ParseDuration("writes.journal_max_age", w.JournalMaxAge); err != nil {
		return s, err
	}
	if s.LockTimeout, err = config.ParseDuration("writes.lock_timeout", w.LockTimeout); err != nil {
		return s, err
	}
	return s, nil
}
