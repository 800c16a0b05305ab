//go:build unix && !linux

package pgtest

import (
	"os/exec"
	"syscall"
)

// applyProcAttr runs cmd as the account (when a is not nil). There is no
// parent-death signal outside Linux: a killed test binary leaves its
// postgres to be stopped by hand.
func applyProcAttr(cmd *exec.Cmd, a *account) {
	if a != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.uid, Gid: a.gid, NoSetGroups: true}}
	}
}
