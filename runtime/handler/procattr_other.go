//go:build !linux

package handler

import "syscall"

// procAttr runs the command in its own process group (no parent-death
// signal outside Linux).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
