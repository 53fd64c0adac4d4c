//go:build !linux

package engine

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// errOS is what every data-path call returns off Linux.
var errOS = fmt.Errorf("blast's data path needs Linux: %w", ErrNotSupported)

type waker struct{}

func Dial(context.Context, string, string, SockOpts) (*Socket, error)      { return nil, errOS }
func Listen(context.Context, string, string, SockOpts) (*Listener, error)  { return nil, errOS }
func ListenUDP(context.Context, string, string, SockOpts) (*Socket, error) { return nil, errOS }
func Adopt(c net.Conn) (*Socket, error)                                    { c.Close(); return nil, errOS }
func Run(context.Context, Backend, *Flow, bool) error                      { return errOS }
func IOErr(op string, err error) error                                     { return fmt.Errorf("%s: %w", op, err) }

func (f *Flow) Read(int, []byte) (int, error)               { return 0, errOS }
func (f *Flow) Recv(int, []byte, int) (int, error)          { return 0, errOS }
func (f *Flow) Send(int, []byte, int) (int, error)          { return 0, errOS }
func (f *Flow) Sendfile(int, int, *int64, int) (int, error) { return 0, errOS }

// Listener is a listening TCP socket (Linux only).
type Listener struct{ s *Socket }

func (l *Listener) Addr() netip.AddrPort                       { return netip.AddrPort{} }
func (l *Listener) BufSize(bool) (int, error)                  { return 0, errOS }
func (l *Listener) Accept(context.Context) (*Socket, error)    { return nil, errOS }
func (l *Listener) Close() error                               { return nil }
func (s *Socket) Shutdown() error                              { return nil }
func (s *Socket) CloseWrite() error                            { return errOS }
func (s *Socket) Close() error                                 { return nil }
func (s *Socket) SetTimeout(time.Duration) error               { return errOS }
func (s *Socket) Read([]byte) (int, error)                     { return 0, errOS }
func (s *Socket) Peek([]byte) (int, error)                     { return 0, errOS }
func (s *Socket) ReadFrom([]byte) (int, netip.AddrPort, error) { return 0, netip.AddrPort{}, errOS }
func (s *Socket) Write([]byte) (int, error)                    { return 0, errOS }
func (s *Socket) WriteTo([]byte, netip.AddrPort) (int, error)  { return 0, errOS }
func (s *Socket) Connect(netip.AddrPort) error                 { return errOS }
func (s *Socket) BufSize(bool) (int, error)                    { return 0, errOS }
func (f *Flow) Cancelled() bool                                { return false }
func (f *Flow) Wait(int, int16, time.Duration) (int16, error)  { return 0, errOS }
func (f *Flow) Sleep(time.Duration) error                      { return errOS }

// Sender is the shared send loop (Linux only).
type Sender struct{}

func NewSender(*Flow) *Sender                   { return &Sender{} }
func NewFileSender(*Flow) *Sender               { return &Sender{} }
func (s *Sender) Fills() bool                   { return false }
func (s *Sender) Next([]byte) ([]byte, error)   { return nil, errOS }
func (s *Sender) Take(int) (int, error)         { return 0, errOS }
func (s *Sender) Over() bool                    { return true }
func (s *Sender) Sent()                         {}
func (s *Sender) Retry(err error) (bool, error) { return false, err }
func WriteAll(*Sender, int, []byte) error       { return errOS }

func (o SockOpts) Control() func(string, string, syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error { return errOS }
}
func (s *Socket) Apply(SockOpts) error { return errOS }
func (s *Socket) ShutdownRead() error  { return nil }
