//go:build !linux

package k8stest

import "syscall"

// procAttr puts a server in a process group of its own (Linux also ties
// its life to the test binary's).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
