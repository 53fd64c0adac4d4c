package ttcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// dialError turns a failed connect into a cause and a fix.
func dialError(c *Config, err error) error {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return fmt.Errorf("unknown host %q: check the name, or give an address", c.Host)
	case errors.Is(err, syscall.ECONNREFUSED):
		name, start := c.peer()
		return fmt.Errorf("connect to %s port %d: connection refused: nothing listens there; start the %s first (%s)", c.Host, c.Port, name, start)
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return fmt.Errorf("connect to %s port %d: no route to that host: check the address and 'blast nic --to %s'", c.Host, c.Port, c.Host)
	case errors.Is(err, syscall.ETIMEDOUT):
		return fmt.Errorf("connect to %s port %d: timed out: is a firewall dropping the connection?", c.Host, c.Port)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("interrupted while connecting to %s", c.Host)
	}
	return fmt.Errorf("connect to %s port %d: %w", c.Host, c.Port, unwrapOp(err))
}

// listenError turns a failed bind into a cause and a fix.
func listenError(c *Config, err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("port %d is in use by another program: stop it, or choose another port with -p on both ends", c.Port)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("port %d: binding a port below 1024 needs root: run as root or choose another port with -p", c.Port)
	case errors.Is(err, syscall.EAFNOSUPPORT):
		return fmt.Errorf("listen on port %d: this host has no IPv%d", c.Port, c.Family)
	}
	return fmt.Errorf("listen on port %d: %w", c.Port, unwrapOp(err))
}

// transferError names what went wrong while bytes were moving.
func transferError(c *Config, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return errors.New("interrupted")
	case !c.Transmit && errors.Is(err, syscall.ECONNRESET):
		return errors.New("the transmitter reset the connection: the data may be incomplete")
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET):
		return errors.New("the receiver closed the connection before all data was sent")
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("the receiver is not there: its host answered port unreachable")
	}
	return unwrapOp(err)
}

// unwrapOp drops net.OpError's repetition of addresses the message has.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}
