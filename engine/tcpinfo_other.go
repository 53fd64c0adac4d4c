//go:build !linux

package engine

// TCPInfo samples the socket's TCP_INFO: Linux only.
func (s *Socket) TCPInfo() (TCPInfo, error) { return TCPInfo{}, errOS }
