package pgtest

import (
	"os/exec"
	"syscall"
)

// applyProcAttr runs cmd as the account (when a is not nil) and has the
// kernel send it SIGQUIT if the test binary dies.
func applyProcAttr(cmd *exec.Cmd, a *account) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT}
	if a != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid, NoSetGroups: true}
	}
}
