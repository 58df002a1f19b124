package devstack

import "syscall"

// childProcAttr puts a child in its own process group (so it can be stopped as a group and does
// not get the terminal's Ctrl-C before we stop it in order) and asks the kernel to kill it if
// this process dies first, so a crashed test binary or `vigil dev` leaves no server behind.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
