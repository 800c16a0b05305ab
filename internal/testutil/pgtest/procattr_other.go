//go:build !unix

package pgtest

import "os/exec"

// applyProcAttr does nothing where processes have no uid to switch to
// (Windows): PostgreSQL refuses to run as an administrator there, so the
// tests must run from an ordinary account.
func applyProcAttr(cmd *exec.Cmd, a *account) {}
