//go:build unix

package redistest

import (
	"os"
	"syscall"
)

func stopSignal() os.Signal { return syscall.SIGSTOP }
func contSignal() os.Signal { return syscall.SIGCONT }
