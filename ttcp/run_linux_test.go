package ttcp_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/blastnet/blast/internal/testkit"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
	"github.com/blastnet/blast/ttcp"
)

// These tests run both ends of ttcp mode in the test process, over real
// sockets on 127.0.0.1.

// end is one ttcp end running in the test process.
type end struct {
	cfg       ttcp.Config
	out, errs bytes.Buffer // read only after done
	err       error
	done      chan struct{}
}

// config is ttcp's defaults for one end on port, changed by set.
func config(transmit bool, port int, set func(c *ttcp.Config)) ttcp.Config {
	c := ttcp.Defaults()
	c.Transmit, c.Port = transmit, port
	c.Stdin = strings.NewReader("")
	if set != nil {
		set(&c)
	}
	return c
}

// start runs c; Stdout and Stderr go to the end's buffers unless c sets
// them.
func start(t *testing.T, c ttcp.Config) *end {
	t.Helper()
	e := &end{cfg: c, done: make(chan struct{})}
	if e.cfg.Stdout == nil {
		e.cfg.Stdout = &e.out
	}
	if e.cfg.Stderr == nil {
		e.cfg.Stderr = &e.errs
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	go func() {
		defer close(e.done)
		defer cancel()
		_, e.err = ttcp.Run(ctx, e.cfg)
	}()
	t.Cleanup(func() {
		cancel()
		<-e.done
	})
	return e
}

// listening starts c, an end that listens, and waits until its socket is
// bound, without connecting to it (ttcp takes one connection only).
func listening(t *testing.T, c ttcp.Config) *end {
	t.Helper()
	e := start(t, c)
	network := "tcp"
	if c.UDP {
		network = "udp"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := netlab.WaitPort(ctx, os.Getpid(), network, c.Port); err != nil {
		t.Fatal(err)
	}
	return e
}

// wait waits for the end to finish and fails the test if it failed.
func (e *end) wait(t *testing.T) {
	t.Helper()
	select {
	case <-e.done:
	case <-time.After(time.Minute):
		t.Fatalf("%s still runs after a minute", side(e.cfg))
	}
	if e.err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", side(e.cfg), e.err, e.out.String(), e.errs.String())
	}
}

func side(c ttcp.Config) string {
	if c.Transmit {
		return "transmitter"
	}
	return "receiver"
}

// masks hide what changes from run to run in ttcp's lines: times, rates,
// call counts, rusage, the buffer's address, the NIC's report; what stays
// is every line, in order, with its words and its byte counts.
var masks = []struct {
	re *regexp.Regexp
	to string
}{
	{regexp.MustCompile(`bytes in [0-9.]+ (real|CPU) seconds = [0-9.]+ `), "bytes in T $1 seconds = R "},
	{regexp.MustCompile(`\d+ I/O calls, msec/call = [0-9.]+, calls/sec = [0-9.]+`), "N I/O calls, msec/call = T, calls/sec = R"},
	{regexp.MustCompile(`(?m)^(\S+: )[0-9.]+user [0-9.]+sys \d+:\d+real \d+% .*csw$`), "${1}RUSAGE"},
	{regexp.MustCompile(`(bytes per (read|write): )avg [0-9.]+, min \d+, max \d+ over \d+`), "${1}avg A, min M, max X over N"},
	{regexp.MustCompile(`(?m)^(\S+: )[0-9.]+ [KMG]?bit/s \(backend`), "${1}RATE (backend"},
	{regexp.MustCompile(`(?m)(: \w+: syscalls) \d+$`), "$1 N"},
	{regexp.MustCompile(`buffer address 0x[0-9a-f]+`), "buffer address ADDR"},
	{regexp.MustCompile(`(?m)^(\S+: tcp:) \d+ retransmits, .*$`), "$1 N retransmits, ..."},
	// The NIC's lines come last; how many there are depends on what else
	// crossed lo (the lab tests check them).
	{regexp.MustCompile(`(?ms)^(\S+: nic) .*`), "$1 ...\n"},
}

// mask applies masks, and writes the port as PORT.
func mask(s string, port int) string {
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.to)
	}
	p := strconv.Itoa(port)
	return strings.NewReplacer("port="+p, "port=PORT", "port "+p, "port PORT", "-p "+p, "-p PORT").Replace(s)
}

// transcript is both ends' output, masked, for a golden file.
func transcript(port int, tx, rx *end) string {
	var b strings.Builder
	for _, e := range []*end{tx, rx} {
		for _, s := range []struct {
			name string
			out  *bytes.Buffer
		}{{"stdout", &e.out}, {"stderr", &e.errs}} {
			fmt.Fprintf(&b, "== %s %s\n", side(e.cfg), s.name)
			if e.cfg.Stdout != &e.out && s.name == "stdout" {
				b.WriteString("(received data)\n")
				continue
			}
			b.WriteString(mask(s.out.String(), port))
		}
	}
	return b.String()
}

// TestGolden runs pairs of ends and compares every line they print, in
// order, with a golden file: ttcp's header, its progress lines (socket,
// sndbuf or rcvbuf, nodelay, connect; accept from), its summary, and
// blast's lines after it.
func TestGolden(t *testing.T) {
	data := make([]byte, 100000)
	rand.Read(data)
	for _, tc := range []struct {
		name   string
		listen bool // the transmitter listens (-R), or the receiver
		tx, rx func(c *ttcp.Config)
	}{
		{"tcp", false,
			func(c *ttcp.Config) { c.SinkMode, c.NBuf, c.Host = true, 100, "127.0.0.1" },
			func(c *ttcp.Config) { c.SinkMode = true }},
		{"tcp-b-D-v", false,
			func(c *ttcp.Config) {
				c.SinkMode, c.NBuf, c.Host, c.SockBuf, c.NoDelay, c.Verbose = true, 100, "127.0.0.1", 65536, true, true
			},
			func(c *ttcp.Config) { c.SinkMode, c.SockBuf, c.Verbose = true, 65536, true }},
		{"reverse", true,
			func(c *ttcp.Config) { c.Prog, c.Reverse, c.SinkMode, c.NBuf = "ttcp", true, true, 100 },
			func(c *ttcp.Config) { c.Prog, c.Reverse, c.SinkMode, c.Host = "ttcp", true, true, "127.0.0.1" }},
		{"reverse-b-D", true,
			func(c *ttcp.Config) {
				c.Prog, c.Reverse, c.SinkMode, c.NBuf, c.SockBuf, c.NoDelay = "ttcp", true, true, 100, 65536, true
			},
			func(c *ttcp.Config) {
				c.Prog, c.Reverse, c.SinkMode, c.Host, c.SockBuf, c.NoDelay = "ttcp", true, true, "127.0.0.1", 65536, true
			}},
		{"reverse-stdin-B-v", true,
			func(c *ttcp.Config) { c.Reverse, c.Stdin = true, bytes.NewReader(data) },
			func(c *ttcp.Config) {
				c.Reverse, c.Host, c.Blocks, c.BufLen, c.Align, c.Offset, c.Verbose = true, "127.0.0.1", true, 4096, 4096, 8, true
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := testkit.FreePort(t)
			var sink *sizes
			tx, rx := config(true, port, tc.tx), config(false, port, tc.rx)
			if !rx.SinkMode {
				sink = &sizes{}
				rx.Stdout = sink
			}
			var txe, rxe *end
			if tc.listen {
				txe = listening(t, tx)
				rxe = start(t, rx)
			} else {
				rxe = listening(t, rx)
				txe = start(t, tx)
			}
			txe.wait(t)
			rxe.wait(t)
			golden.Check(t, "testdata/"+tc.name+".golden", transcript(port, txe, rxe))
			if sink == nil {
				return
			}
			if !bytes.Equal(sink.data.Bytes(), data) {
				t.Errorf("the receiver wrote %d bytes that differ from the %d sent", sink.data.Len(), len(data))
			}
			if rx.Blocks {
				checkBlocks(t, sink.writes, len(data), rx.BufLen)
				checkAddress(t, rxe.errs.String(), rx)
			}
		})
	}
}

// sizes is a standard output that records the size of every write.
type sizes struct {
	data   bytes.Buffer
	writes []int
}

func (s *sizes) Write(p []byte) (int, error) {
	s.writes = append(s.writes, len(p))
	return s.data.Write(p)
}

// checkBlocks checks that the writes of total bytes are whole blocks of
// n, the last one excepted.
func checkBlocks(t *testing.T, writes []int, total, n int) {
	t.Helper()
	var want []int
	for left := total; left > 0; left -= n {
		want = append(want, min(left, n))
	}
	if diff := cmp.Diff(want, writes); diff != "" {
		t.Errorf("write sizes with -B -l %d (-want +got):\n%s", n, diff)
	}
}

var addressLine = regexp.MustCompile(`(?m)^\S+: buffer address (0x[0-9a-f]+)$`)

// checkAddress checks ttcp's -v buffer address line: an address placed
// as -A and -O say.
func checkAddress(t *testing.T, out string, c ttcp.Config) {
	t.Helper()
	m := addressLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no buffer address line in:\n%s", out)
	}
	addr, err := strconv.ParseUint(m[1], 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	if got := int(addr % uint64(c.Align)); got != c.Offset {
		t.Errorf("buffer address %#x is %d past a multiple of %d, want %d (-A %d -O %d)", addr, got, c.Align, c.Offset, c.Align, c.Offset)
	}
}

// TestUDPVerbose checks the -v lines of a UDP run, where ttcp mode reads
// and writes its sentinels with a buffer of its own, placed by -A and
// -O, whose address it prints as ttcp does.
func TestUDPVerbose(t *testing.T) {
	port := testkit.FreePort(t)
	rx := config(false, port, func(c *ttcp.Config) {
		c.UDP, c.SinkMode, c.Verbose, c.SockBuf, c.Align, c.Offset = true, true, true, 131072, 4096, 16
	})
	tx := config(true, port, func(c *ttcp.Config) {
		c.UDP, c.SinkMode, c.Verbose, c.NBuf, c.BufLen, c.Host, c.Rate = true, true, true, 50, 1000, "127.0.0.1", 100e6
	})
	rxe := listening(t, rx)
	txe := start(t, tx)
	txe.wait(t)
	rxe.wait(t)
	golden.Check(t, "testdata/udp-v.golden", transcript(port, txe, rxe))
	checkAddress(t, txe.out.String(), tx)
	checkAddress(t, rxe.out.String(), rx)
}

// TestBlocksShortReads sends in pieces of 7 bytes and lets the receiver
// read each before the next leaves, so that its reads are short; with -B
// its standard output must still get whole -l blocks only.
func TestBlocksShortReads(t *testing.T) {
	const piece, pieces, block = 7, 100, 64
	port := testkit.FreePort(t)
	sink := &sizes{}
	rx := listening(t, config(false, port, func(c *ttcp.Config) { c.Blocks, c.BufLen, c.Stdout = true, block, sink }))
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rfd := fdOf(t, conn.RemoteAddr(), conn.LocalAddr())
	var sent []byte
	for i := range pieces {
		p := bytes.Repeat([]byte{'a' + byte(i%26)}, piece)
		if _, err := conn.Write(p); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, p...)
		drained(t, conn.(*net.TCPConn), rfd)
	}
	conn.Close()
	rx.wait(t)
	if !bytes.Equal(sink.data.Bytes(), sent) {
		t.Errorf("the receiver wrote %q, want %q", sink.data.Bytes(), sent)
	}
	checkBlocks(t, sink.writes, len(sent), block)
	// Every read was short: none took a whole block.
	m := regexp.MustCompile(`(?m)^blast-r: bytes per read: avg [0-9.]+, min (\d+), max (\d+) over (\d+) reads$`).FindStringSubmatch(rx.errs.String())
	if m == nil {
		t.Fatalf("no read statistics in:\n%s", rx.errs.String())
	}
	if max, _ := strconv.Atoi(m[2]); max >= block {
		t.Errorf("a read took %d bytes, a whole %d-byte block: the reads were not short\n%s", max, block, rx.errs.String())
	}
	golden.Check(t, "testdata/blocks-short-reads.golden", mask(rx.errs.String(), port))
}

// drained waits until the peer of conn, whose socket is rfd in this
// process, has read everything conn sent: nothing is left unacknowledged
// on conn, and nothing unread on rfd.
func drained(t *testing.T, conn *net.TCPConn, rfd int) {
	t.Helper()
	rc, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var outq, inq int
	left := func() bool {
		var qerr, err error
		if cerr := rc.Control(func(fd uintptr) { outq, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); cerr != nil || qerr != nil {
			t.Fatal(errors.Join(cerr, qerr))
		}
		if inq, err = unix.IoctlGetInt(rfd, unix.SIOCINQ); err != nil {
			t.Fatal(err)
		}
		return outq == 0 && inq == 0
	}
	if !testkit.Eventually(30*time.Second, left) {
		t.Fatalf("after 30 s, %d bytes unacknowledged and %d unread", outq, inq)
	}
}

// fdOf finds the descriptor of this process's TCP socket bound to local
// and connected to peer: a ttcp end's socket, which the engine keeps to
// itself. It waits for an accepting end to take the connection.
func fdOf(t *testing.T, local, peer net.Addr) int {
	t.Helper()
	want := func(a net.Addr) netip.AddrPort { return a.(*net.TCPAddr).AddrPort() }
	unmapped := func(sa unix.Sockaddr) netip.AddrPort {
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
		case *unix.SockaddrInet6:
			return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
		}
		return netip.AddrPort{}
	}
	fd := -1
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("a socket %v -> %v in this process", local, peer), func() bool {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			n, _ := strconv.Atoi(e.Name())
			ls, err1 := unix.Getsockname(n)
			ps, err2 := unix.Getpeername(n)
			if err1 == nil && err2 == nil && unmapped(ls) == want(local) && unmapped(ps) == want(peer) {
				fd = n
				return true
			}
		}
		return false
	})
	return fd
}

// TestDebug checks -d on the data socket with getsockopt, on the end that
// connects and on the end that accepts, and that without -d the socket
// has no SO_DEBUG.
func TestDebug(t *testing.T) {
	labtest.RequireRoot(t) // SO_DEBUG needs CAP_NET_ADMIN
	for _, debug := range []bool{true, false} {
		t.Run(fmt.Sprintf("accepting, -d %v", debug), func(t *testing.T) {
			port := testkit.FreePort(t)
			rx := listening(t, config(false, port, func(c *ttcp.Config) { c.SinkMode, c.Debug = true, debug }))
			conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				t.Fatal(err)
			}
			checkDebug(t, fdOf(t, conn.RemoteAddr(), conn.LocalAddr()), debug)
			conn.Close()
			rx.wait(t)
		})
		t.Run(fmt.Sprintf("connecting, -d %v", debug), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			// The transmitter reads its standard input, which stays open
			// while the test looks at its socket.
			in, inw := io.Pipe()
			tx := start(t, config(true, ln.Addr().(*net.TCPAddr).Port, func(c *ttcp.Config) {
				c.Host, c.Debug, c.Stdin = "127.0.0.1", debug, in
			}))
			conn, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			checkDebug(t, fdOf(t, conn.RemoteAddr(), conn.LocalAddr()), debug)
			inw.Close()
			io.Copy(io.Discard, conn)
			tx.wait(t)
		})
	}
}

func checkDebug(t *testing.T, fd int, want bool) {
	t.Helper()
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DEBUG)
	if err != nil {
		t.Fatal(err)
	}
	if got := v != 0; got != want {
		t.Errorf("SO_DEBUG is %d, want %v", v, want)
	}
}

// TestDebugNeedsCapNetAdmin runs blast without CAP_NET_ADMIN: -d fails on
// either end with one line naming the cause and the fix, and exit status
// 1, as ttcp's setsockopt failure ends ttcp.
func TestDebugNeedsCapNetAdmin(t *testing.T) {
	labtest.RequireRoot(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is missing: it drops CAP_NET_ADMIN for this test")
	}
	port := strconv.Itoa(testkit.FreePort(t))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "-s", "-d", "-p", port, "127.0.0.1"},
			"blast-t: socket\nblast-t: connect to 127.0.0.1 port " + port + ": set SO_DEBUG: needs CAP_NET_ADMIN; run as root\n"},
		{[]string{"-r", "-s", "-d", "-p", port},
			"blast-r: socket\nblast-r: listen on port " + port + ": set SO_DEBUG: needs CAP_NET_ADMIN; run as root\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command("setpriv", append([]string{"--inh-caps=-net_admin", "--bounding-set=-net_admin", "--", blasttest.Bin}, tc.args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("exit: %v, want status 1", err)
			}
			if got := stderr.String(); got != tc.want {
				t.Errorf("stderr:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
