//go:build unix && !linux

package devstack

import "syscall"

// childProcAttr puts a child in its own process group so it can be stopped as a group.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
