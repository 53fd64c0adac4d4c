package control

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"golang.org/x/sys/unix"
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

// The server answers a stream's hello again when the client sends it
// again (its first answer lost: the kernel gives the connected client's
// datagrams to the stream's socket, not the gate), and stops at the first
// data datagram, which it leaves for the receiver; stop gives the socket
// its timeout back.
func TestUDPReanswer(t *testing.T) {
	cli, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	sock, err := engine.ListenUDP(ctx, "udp4", "127.0.0.1:0", engine.SockOpts{})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	if err := sock.Connect(netip.MustParseAddrPort(cli.LocalAddr().String())); err != nil {
		t.Fatal(err)
	}
	stop, err := reanswer(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	to := net.UDPAddrFromAddrPort(sock.LocalAddr())
	cli.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 2048)
	for i := range 2 { // the hello, sent again, answered each time
		if _, err := cli.WriteToUDP(udpHello[:], to); err != nil {
			t.Fatal(err)
		}
		n, err := cli.Read(buf)
		if err != nil || n != 4 || [4]byte(buf[:4]) != udpReply {
			t.Fatalf("hello %d: got %q, %v; want the answer", i+1, buf[:n], err)
		}
	}
	data := bytes.Repeat([]byte{7}, 1400)
	if _, err := cli.WriteToUDP(data, to); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.WriteToUDP(udpHello[:], to); err != nil { // after data: not answered
		t.Fatal(err)
	}
	stop()
	var tv [2]time.Duration
	sock.Control(func(fd int) error {
		for i, opt := range []int{unix.SO_SNDTIMEO, unix.SO_RCVTIMEO} {
			v, _ := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, opt)
			tv[i] = time.Duration(v.Nano())
		}
		return nil
	})
	if tv != [2]time.Duration{} {
		t.Errorf("timeouts %v after stop, want none", tv)
	}
	sock.SetTimeout(time.Minute)
	if n, err := sock.Read(buf); err != nil || n != len(data) {
		t.Errorf("the receiver read %d bytes, %v; want the data datagram of %d", n, err, len(data))
	}
	if n, err := sock.Read(buf); err != nil || n != 4 {
		t.Errorf("the receiver read %d bytes, %v; want the hello sent after the data", n, err)
	}
}
