package devstack

import (
	"os"
	"strconv"
	"syscall"
)

// childProcAttr puts a child in its own process group (so it can be stopped as a group and does
// not get the terminal's Ctrl-C before we stop it in order) and asks the kernel to kill it if
// this process dies first, so a crashed test binary or `vigil dev` leaves no server behind.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// backgroundProcAttr is childProcAttr in a session of its own (and so a process group of its own),
// whose scheduler autogroup StartBackground ranks (lowerAutogroup).
func backgroundProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// lowerAutogroup gives the scheduler autogroup of pid's session the nice value nice (Linux with
// autogroups on: the kernel first shares the CPU between sessions by their autogroup's weight, and only
// inside a session by each process's nice). An error means the kernel has no autogroups (or pid is
// gone): the process's own nice value then ranks it.
func lowerAutogroup(pid, nice int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/autogroup", []byte(strconv.Itoa(nice)), 0)
}
