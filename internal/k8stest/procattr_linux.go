package k8stest

import "syscall"

// procAttr puts a server in a process group of its own, killed with the
// test binary should it die before its cleanups.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
