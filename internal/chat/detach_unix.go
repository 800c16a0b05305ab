//go:build unix

package chat

import (
	"os/exec"
	"syscall"
)

// detach starts the command in its own process group, so that Ctrl-C in
// the terminal (SIGINT to the foreground group) interrupts the chat's
// current turn without killing the servers it spawned.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
