package control

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
)

// TestUDPHandshakeAnswerLost: a server whose answer to the hello was
// lost (here: it never answers) but which sends data once it has the
// stream, as a reverse test's server does: the handshake ends on the
// first data datagram, which stays for the receiver to count. Skipping
// it (as before) waited for an answer that never came. A server that
// answers ends it as ever, and a short stray datagram is skipped.
func TestUDPHandshakeAnswerLost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply [][]byte // what the server sends on the hello
		left  int      // the length of the datagram left for the receiver (0: none)
	}{
		{"answer lost, data sent", [][]byte{make([]byte, 1400)}, 1400},
		{"answer", [][]byte{udpReply[:]}, 0},
		{"legacy answer", [][]byte{udpLegacyReply[:]}, 0},
		{"a stray short datagram, then the answer", [][]byte{{1, 2}, udpReply[:]}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			go func() {
				buf := make([]byte, 64)
				n, from, err := srv.ReadFromUDP(buf)
				if err != nil || n != 4 || [4]byte(buf[:4]) != udpHello {
					return
				}
				for _, r := range tc.reply {
					srv.WriteToUDP(r, from)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sock, err := engine.Dial(ctx, "udp", srv.LocalAddr().String(), engine.SockOpts{})
			if err != nil {
				t.Fatal(err)
			}
			defer sock.Close()
			if err := udpHandshake(ctx, sock); err != nil {
				t.Fatalf("handshake: %v", err)
			}
			sock.SetTimeout(100 * time.Millisecond)
			buf := make([]byte, 2048)
			n, err := sock.Read(buf)
			switch {
			case tc.left > 0 && (err != nil || n != tc.left):
				t.Errorf("the receiver read %d bytes, %v; want the data datagram of %d", n, err, tc.left)
			case tc.left == 0 && err == nil:
				t.Errorf("a datagram of %d bytes left after the answer", n)
			}
		})
	}
}
