//go:build unix && !linux

package devstack

import "syscall"

// childProcAttr puts a child in its own process group so it can be stopped as a group.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// backgroundProcAttr is childProcAttr: no autogroups to rank here.
func backgroundProcAttr() *syscall.SysProcAttr { return childProcAttr() }

// lowerAutogroup does nothing where the kernel has no autogroups: the process's nice value ranks it.
func lowerAutogroup(pid, nice int) error { return nil }
