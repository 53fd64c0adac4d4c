// Package sockets holds the backends that move bytes through the kernel's
// socket calls, starting with readwrite (plain read(2)/write(2), the
// default), and the socket options every mode sets before a connection is
// made: buffer sizes (reporting what the kernel granted), TCP_NODELAY, TOS
// and the interface to bind to.
package sockets
