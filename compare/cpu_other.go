//go:build !linux

package compare

// threadCPU is not measured off Linux.
func threadCPU() CPU { return CPU{} }

func bigBuffers(c interface {
	SyscallConn() (syscallRawConn, error)
}) {
}
