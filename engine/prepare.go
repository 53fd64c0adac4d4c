package engine

import "context"

// Preparer is a Backend whose receive must be set up before the
// transmitter starts, so that nothing the transmitter sends slips past it.
// The afxdp backend is one: its XDP program and AF_XDP sockets steer the
// flow's datagrams away from the socket only once they are in place, and
// setting them up takes milliseconds that a fast transmitter fills with
// datagrams.
//
// A mode calls Prepare once the flow's socket is bound (f.Conn is set)
// and before it waits for the transmitter, then Recv as usual, and
// release after Recv returns (also when it failed or never ran). What a
// Preparer sets up must leave the flow's socket able to see the
// transmitter arrive: ttcp's receiver reads the start sentinel, or the
// first datagram, from it.
type Preparer interface {
	Backend
	// Prepare readies f for Recv. release undoes whatever Recv did not
	// take over; it is safe to call after Recv and more than once.
	Prepare(ctx context.Context, f *Flow) (release func() error, err error)
}

// Prepare calls b's Prepare when b is a Preparer. The release it returns
// is never nil: for other backends it does nothing.
func Prepare(ctx context.Context, b Backend, f *Flow) (release func() error, err error) {
	p, ok := b.(Preparer)
	if !ok {
		return func() error { return nil }, nil
	}
	release, err = p.Prepare(ctx, f)
	if err != nil {
		return nil, err
	}
	if release == nil {
		release = func() error { return nil }
	}
	return release, nil
}
