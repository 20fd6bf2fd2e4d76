package verifytest

import "syscall"

// killOnParentExit has the kernel kill the child when the OS thread that started it ends.
func killOnParentExit() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// canShareProvider: Linux can tie a provider's life to the test process (killOnParentExit).
const canShareProvider = true
