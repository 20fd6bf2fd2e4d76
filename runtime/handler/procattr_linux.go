package handler

import "syscall"

// procAttr runs the command in its own process group and asks the kernel
// to SIGKILL it if the worker dies (kill -9, OOM) before it finishes, so a
// killed worker does not leave its step running unsupervised.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
