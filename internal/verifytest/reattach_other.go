//go:build !linux

package verifytest

import "syscall"

// killOnParentExit: without Linux's parent-death signal a shared provider would outlive a
// killed test process, so validateWithMirror lets each terraform run start its own.
func killOnParentExit() *syscall.SysProcAttr { return nil }

const canShareProvider = false
