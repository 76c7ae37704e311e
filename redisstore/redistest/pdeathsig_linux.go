package redistest

import (
	"os/exec"
	"syscall"
)

// setPdeathsig makes the kernel kill the server when the test binary dies,
// so a killed test run leaves no redis-server behind.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
