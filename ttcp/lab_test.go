package ttcp_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

func TestMain(m *testing.M) { blasttest.Main(m, true) }

var bytesLine = regexp.MustCompile(`(?m)^(\S+): (\d+) bytes in [0-9.]+ real seconds = [0-9.]+ [KMG]?(B|bit)/sec \+\+\+$`)

// reported returns the byte count of ttcp's summary line in out, checking
// its prefix.
func reported(t *testing.T, out, prefix string) int64 {
	t.Helper()
	m := bytesLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no ttcp summary line in:\n%s", out)
	}
	if m[1] != prefix {
		t.Errorf("summary line prefix %q, want %q", m[1], prefix)
	}
	n, _ := strconv.ParseInt(m[2], 10, 64)
	return n
}

func lineWith(t *testing.T, out, re string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)` + re).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no line matching %q in:\n%s", re, out)
	}
	return m
}

func TestLabTCPSinkSource(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	for _, addr := range []string{lab.B.Addr4.String(), lab.B.Addr6.String()} {
		t.Run(addr, func(t *testing.T) {
			r := blasttest.Listening(t, lab.B, "tcp", 5001, blasttest.Bin, "-r", "-s", "-l", "131072")
			tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, "-t", "-s", "-l", "65536", "-n", "1024", addr)
			tx.Wait(t)
			r.Wait(t)
			const want = 64 << 20
			if got := reported(t, tx.Stdout.String(), "blast-t"); got != want {
				t.Errorf("transmitter reports %d bytes, want %d", got, want)
			}
			if got := reported(t, r.Stdout.String(), "blast-r"); got != want {
				t.Errorf("receiver reports %d bytes, want %d", got, want)
			}
			if want := "blast-r: accept from " + lab.A.Addr4.String() + "\n"; addr == lab.B.Addr4.String() && !strings.Contains(r.Stderr.String(), want) {
				t.Errorf("receiver stderr lacks %q:\n%s", want, r.Stderr.String())
			}
			if want := "blast-t: buflen=65536, nbuf=1024, align=16384/0, port=5001  tcp  -> " + addr + "\n"; !strings.HasPrefix(tx.Stdout.String(), want) {
				t.Errorf("transmitter header:\n%s\nwant %q", tx.Stdout.String(), want)
			}
			if got := tx.Stderr.String(); got != "blast-t: socket\nblast-t: connect\n" {
				t.Errorf("transmitter progress lines %q", got)
			}
			// Each end names the veth that carried the test, with its
			// counters.
			lineWith(t, tx.Stdout.String(), `^blast-t: nic `+regexp.QuoteMeta(lab.A.Iface)+`: veth, 10G/full, `)
			lineWith(t, r.Stdout.String(), `^blast-r: nic `+regexp.QuoteMeta(lab.B.Iface)+`: veth, 10G/full, `)
			// ttcp's transmitter stops its clock at close, with up to a
			// socket buffer of data still to go out: most, not all, of the
			// payload has crossed its veth by then.
			m := lineWith(t, tx.Stdout.String(), `^blast-t: nic deltas `+regexp.QuoteMeta(lab.A.Iface)+`: .*tx_bytes \+(\d+)`)
			if n, _ := strconv.ParseInt(m[1], 10, 64); n < want/2 {
				t.Errorf("the transmitter's veth sent %d bytes during the test, less than half the %d of payload", n, want)
			}
			// The receiver's veth counts a NAPI batch when the batch is done,
			// which can be after the application read its bytes: the last
			// batch may be missing from its delta.
			m = lineWith(t, r.Stdout.String(), `^blast-r: nic deltas `+regexp.QuoteMeta(lab.B.Iface)+`: .*rx_bytes \+(\d+)`)
			if n, _ := strconv.ParseInt(m[1], 10, 64); n < want/2 {
				t.Errorf("the receiver's veth received %d bytes during the test, less than half the %d of payload", n, want)
			}
			// The receiver's buffer is 128 KiB, so no read is larger.
			m = lineWith(t, r.Stdout.String(), `^blast-r: bytes per read: avg [0-9.]+, min (\d+), max (\d+) over (\d+) reads$`)
			if max, _ := strconv.Atoi(m[2]); max > 131072 || max < 1 {
				t.Errorf("largest read %d bytes with a 131072-byte buffer", max)
			}
		})
	}
}

func TestLabStdinToStdout(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	data := make([]byte, 32<<20)
	rand.Read(data)
	r := blasttest.Listening(t, lab.B, "tcp", 5001, blasttest.Bin, "-r")
	tx := blasttest.Start(t, lab.A, data, blasttest.Bin, "-t", lab.B.Addr4.String())
	tx.Wait(t)
	r.Wait(t)
	if got, want := sha256.Sum256(r.Stdout.Bytes()), sha256.Sum256(data); got != want {
		t.Fatalf("receiver's stdout (%d bytes) differs from transmitter's stdin (%d bytes)", r.Stdout.Len(), len(data))
	}
	// With data on stdout, every report line of the receiver is on stderr.
	if got := reported(t, r.Stderr.String(), "blast-r"); got != int64(len(data)) {
		t.Errorf("receiver reports %d bytes, want %d", got, len(data))
	}
	if got := reported(t, tx.Stdout.String(), "blast-t"); got != int64(len(data)) {
		t.Errorf("transmitter reports %d bytes, want %d", got, len(data))
	}
}

// TestLabReverse runs -R across the lab, with the ttcp link: the
// transmitter listens and sends its standard input, the receiver connects
// out to it and writes what it gets in whole -B blocks. Each end prints
// ttcp's progress lines for what it does (accept or connect), and the
// receiver's header names the host it connects to.
func TestLabReverse(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	data := make([]byte, 4<<20+100)
	rand.Read(data)
	ttcp := filepath.Join(filepath.Dir(blasttest.Bin), "ttcp")
	tx := blasttest.Start(t, lab.B, data, ttcp, "-t", "-R", "-D")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := netlab.WaitPort(ctx, tx.Cmd.Process.Pid, "tcp", 5001); err != nil {
		t.Fatalf("%v\nstderr: %s", err, tx.Stderr.String())
	}
	r := blasttest.Start(t, lab.A, nil, ttcp, "-r", "-R", "-B", "-l", "65536", "-D", lab.B.Addr4.String())
	tx.Wait(t)
	r.Wait(t)
	if sha256.Sum256(r.Stdout.Bytes()) != sha256.Sum256(data) {
		t.Fatalf("the receiver wrote %d bytes that differ from the %d the transmitter read", r.Stdout.Len(), len(data))
	}
	if got := reported(t, tx.Stdout.String(), "ttcp-t"); got != int64(len(data)) {
		t.Errorf("transmitter reports %d bytes, want %d", got, len(data))
	}
	if got := reported(t, r.Stderr.String(), "ttcp-r"); got != int64(len(data)) {
		t.Errorf("receiver reports %d bytes, want %d", got, len(data))
	}
	// The transmitter accepts: no nodelay line (ttcp prints it where it
	// connects), and its header names no host.
	if got, want := tx.Stderr.String(), "ttcp-t: socket\nttcp-t: accept from "+lab.A.Addr4.String()+"\n"; got != want {
		t.Errorf("transmitter stderr:\n got %q\nwant %q", got, want)
	}
	if got, want := strings.SplitAfter(tx.Stdout.String(), "\n")[0], "ttcp-t: buflen=8192, nbuf=2048, align=16384/0, port=5001  tcp\n"; got != want {
		t.Errorf("transmitter header:\n got %q\nwant %q", got, want)
	}
	// With data on its standard output, the receiver's lines are all on
	// standard error: the header, then socket, nodelay, connect.
	want := "ttcp-r: buflen=65536, nbuf=2048, align=16384/0, port=5001  tcp  -> " + lab.B.Addr4.String() + "\n" +
		"ttcp-r: socket\nttcp-r: nodelay\nttcp-r: connect\n"
	if got := r.Stderr.String(); !strings.HasPrefix(got, want) {
		t.Errorf("receiver stderr:\n%s\nwant it to start with\n%s", got, want)
	}
}

func TestLabUDPSentinels(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	const n, size = 2000, 1400
	r := blasttest.Listening(t, lab.B, "udp", 5001, blasttest.Bin, "-r", "-s", "-u", "-l", "65507", "-b", "8388608")
	// Paced well below what the receiver drains, so nothing is lost.
	tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, "-t", "-s", "-u", "-l", strconv.Itoa(size), "-n", strconv.Itoa(n), "--rate", "200M", lab.B.Addr4.String())
	tx.Wait(t)
	r.Wait(t)
	if got := reported(t, tx.Stdout.String(), "blast-t"); got != n*size {
		t.Errorf("transmitter reports %d bytes, want %d", got, n*size)
	}
	if got := reported(t, r.Stdout.String(), "blast-r"); got != n*size {
		t.Errorf("receiver reports %d bytes, want %d", got, n*size)
	}
	lineWith(t, tx.Stdout.String(), fmt.Sprintf(`^blast-t: %d datagrams sent$`, n))
	lineWith(t, r.Stdout.String(), fmt.Sprintf(`^blast-r: %d datagrams received$`, n))
	// ttcp counts the sentinels: start, end and four more on the
	// transmitter; start and end on the receiver.
	lineWith(t, tx.Stdout.String(), fmt.Sprintf(`^blast-t: %d I/O calls, `, n+6))
	lineWith(t, r.Stdout.String(), fmt.Sprintf(`^blast-r: %d I/O calls, `, n+2))
	lineWith(t, r.Stdout.String(), `^blast-r: real buffer size = \d+$`)
}

func TestLabInvokedAsTTCP(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	ttcp := filepath.Join(filepath.Dir(blasttest.Bin), "ttcp")
	r := blasttest.Listening(t, lab.B, "tcp", 5002, ttcp, "-r", "-s", "-p", "5002")
	tx := blasttest.Start(t, lab.A, nil, ttcp, "-t", "-s", "-p", "5002", "-n", "100", "-fm", lab.B.Addr4.String())
	tx.Wait(t)
	r.Wait(t)
	if got := reported(t, tx.Stdout.String(), "ttcp-t"); got != 100*8192 {
		t.Errorf("transmitter reports %d bytes", got)
	}
	if got := reported(t, r.Stdout.String(), "ttcp-r"); got != 100*8192 {
		t.Errorf("receiver reports %d bytes", got)
	}
	lineWith(t, tx.Stdout.String(), `^ttcp-t: \d+ bytes in [0-9.]+ real seconds = [0-9.]+ Mbit/sec \+\+\+$`)
}

// TestLabPeers checks wire compatibility with an independent
// implementation: socat sends a plain TCP stream to blast's receiver, and
// takes blast's transmitter's stream as a plain sink.
func TestLabPeers(t *testing.T) {
	if _, err := exec.LookPath("socat"); err != nil {
		t.Fatal("socat is missing: make test installs it (apt-get install socat)")
	}
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	data := make([]byte, 8<<20+17)
	rand.Read(data)

	t.Run("socat to blast -r", func(t *testing.T) {
		r := blasttest.Listening(t, lab.B, "tcp", 5001, blasttest.Bin, "-r")
		tx := blasttest.Start(t, lab.A, data, "socat", "-u", "STDIN", "TCP:"+lab.B.Addr4.String()+":5001")
		tx.Wait(t)
		r.Wait(t)
		if !bytes.Equal(r.Stdout.Bytes(), data) {
			t.Errorf("blast -r wrote %d bytes that differ from the %d socat sent", r.Stdout.Len(), len(data))
		}
		if got := reported(t, r.Stderr.String(), "blast-r"); got != int64(len(data)) {
			t.Errorf("blast -r reports %d bytes, want %d", got, len(data))
		}
	})
	t.Run("blast -t to socat", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "received")
		r := blasttest.Listening(t, lab.B, "tcp", 5001, "socat", "-u", "TCP-LISTEN:5001,reuseaddr", "CREATE:"+out)
		tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, "-t", "-s", "-n", "1000", lab.B.Addr4.String())
		tx.Wait(t)
		r.Wait(t)
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1000*8192 {
			t.Fatalf("socat received %d bytes, want %d", len(got), 1000*8192)
		}
		// ttcp's pattern: printable ASCII from ' ' to '~', repeating.
		for i, c := range got[:200] {
			if want := byte(' ' + i%95); c != want {
				t.Fatalf("byte %d is %q, want the pattern's %q", i, c, want)
			}
		}
		if n := reported(t, tx.Stdout.String(), "blast-t"); n != int64(len(got)) {
			t.Errorf("blast -t reports %d bytes, socat received %d", n, len(got))
		}
	})
}

// TestLabMMsg runs mmsg on both ends, with and without GSO/GRO: paced well
// below what the receiver drains, every datagram must arrive and both ends
// must count exactly what was sent, in batches, and say so in their
// backend lines.
func TestLabMMsg(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	const n, size = 5000, 64
	for i, tc := range []struct{ tx, rx string }{
		{"mmsg", "mmsg"},
		{"mmsg:batch=16", "mmsg:batch=32"},
		{"mmsg:gso", "mmsg:gro"},
	} {
		t.Run(tc.tx+" to "+tc.rx, func(t *testing.T) {
			port := strconv.Itoa(5101 + i)
			r := blasttest.Listening(t, lab.B, "udp", 5101+i, blasttest.Bin, "-r", "-s", "-u", "-p", port, "-l", "2048", "-b", "8388608", "--backend", tc.rx)
			tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, "-t", "-s", "-u", "-p", port, "-l", strconv.Itoa(size), "-n", strconv.Itoa(n), "--rate", "20M", "--backend", tc.tx, lab.B.Addr4.String())
			tx.Wait(t)
			r.Wait(t)
			tout, rout := tx.Stdout.String(), r.Stdout.String()
			if got := reported(t, tout, "blast-t"); got != n*size {
				t.Errorf("transmitter reports %d bytes, want %d", got, n*size)
			}
			if got := reported(t, rout, "blast-r"); got != n*size {
				t.Errorf("receiver reports %d bytes, want %d", got, n*size)
			}
			lineWith(t, tout, fmt.Sprintf(`^blast-t: %d datagrams sent$`, n))
			lineWith(t, rout, fmt.Sprintf(`^blast-r: %d datagrams received$`, n))
			lineWith(t, tout, `^blast-t: .* \(backend `+regexp.QuoteMeta(tc.tx)+`\)$`)
			lineWith(t, rout, `^blast-r: .* \(backend `+regexp.QuoteMeta(tc.rx)+`\)$`)
			lineWith(t, tout, `^blast-t: mmsg: syscalls \d+$`)
			lineWith(t, rout, `^blast-r: mmsg: syscalls \d+$`)
			// Batched: far fewer sends than datagrams.
			calls, _ := strconv.Atoi(lineWith(t, tout, `^blast-t: bytes per write: .* over (\d+) writes$`)[1])
			if calls == 0 || calls > n/4 {
				t.Errorf("transmitter made %d sends for %d datagrams: not batching\n%s", calls, n, tout)
			}
			if strings.Contains(tc.tx, "gso") {
				lineWith(t, tout, `^blast-t: mmsg: gso_messages \d+$`)
			}
			t.Logf("transmitter:\n%s\nreceiver:\n%s", tout, rout)
		})
	}
}

// TestLabSendFile sends a file with -F through sendfile and splice, and
// checks it arrives byte for byte.
func TestLabSendFile(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	data := make([]byte, 3<<20+17)
	rand.Read(data)
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, backend := range []string{"sendfile", "splice"} {
		t.Run(backend, func(t *testing.T) {
			port := strconv.Itoa(5201 + i)
			r := blasttest.Listening(t, lab.B, "tcp", 5201+i, blasttest.Bin, "-r", "-p", port)
			tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, "-t", "-p", port, "--backend", backend, "-F", file, lab.B.Addr4.String())
			tx.Wait(t)
			r.Wait(t)
			if sha256.Sum256(r.Stdout.Bytes()) != sha256.Sum256(data) {
				t.Errorf("received %d bytes that differ from the %d sent", r.Stdout.Len(), len(data))
			}
			out := tx.Stdout.String()
			if got := reported(t, out, "blast-t"); got != int64(len(data)) {
				t.Errorf("transmitter reports %d bytes, want %d", got, len(data))
			}
			lineWith(t, out, fmt.Sprintf(`^blast-t: %s: bytes_not_copied %d$`, backend, len(data)))
			lineWith(t, out, `^blast-t: .* \(backend `+backend+`:file=`+regexp.QuoteMeta(file)+`\)$`)
		})
	}
}

// xdpAttached waits until an XDP program is attached to h's lab
// interface: an afxdp receiver is ready for the transmitter.
func xdpAttached(t *testing.T, h *netlab.Host) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, "an XDP program attached to "+h.Iface, func() bool {
		out, _ := h.Command("ip", "-o", "link", "show", "dev", h.Iface).Output()
		return strings.Contains(string(out), " xdp")
	})
}

// TestLabAFXDP runs afxdp on both ends, paced below what the receiver
// drains: every datagram must arrive, in order, and both ends must count
// exactly what was sent. The receiver attaches its XDP program before it
// waits for the start sentinel (engine.Preparer), so the first datagrams
// cannot slip past its AF_XDP sockets; nothing stays attached after it.
func TestLabAFXDP(t *testing.T) {
	const n, size = 20000, 1000
	for i, tc := range []struct {
		queues int
		tx     string
	}{
		{1, "afxdp"},
		{2, "afxdp:queues=2"},
	} {
		t.Run(tc.tx, func(t *testing.T) {
			lab := labtest.New(t, netlab.Direct, netlab.Options{Queues: tc.queues})
			port := strconv.Itoa(5301 + i)
			r := blasttest.Listening(t, lab.B, "udp", 5301+i, blasttest.Bin, "-r", "-s", "-u", "-p", port, "-l", strconv.Itoa(size), "-I", lab.B.Iface, "--backend", "afxdp")
			xdpAttached(t, lab.B)
			tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, "-t", "-s", "-u", "-p", port, "-l", strconv.Itoa(size), "-n", strconv.Itoa(n),
				"--rate", "400M", "-I", lab.A.Iface, "--backend", tc.tx, lab.B.Addr4.String())
			tx.Wait(t)
			r.Wait(t)
			tout, rout := tx.Stdout.String(), r.Stdout.String()
			t.Logf("transmitter:\n%s\nreceiver:\n%s", tout, rout)
			if got := reported(t, tout, "blast-t"); got != n*size {
				t.Errorf("transmitter reports %d bytes, want %d", got, n*size)
			}
			if got := reported(t, rout, "blast-r"); got != n*size {
				t.Errorf("receiver reports %d bytes, want %d", got, n*size)
			}
			lineWith(t, tout, fmt.Sprintf(`^blast-t: %d datagrams sent$`, n))
			lineWith(t, rout, fmt.Sprintf(`^blast-r: %d datagrams received$`, n))
			lineWith(t, rout, `^blast-r: afxdp: lost_datagrams 0$`)
			lineWith(t, rout, `^blast-r: afxdp: reordered_datagrams 0$`)
			lineWith(t, rout, `^blast-r: afxdp: afxdp: attached before the transmitter started`)
			lineWith(t, tout, fmt.Sprintf(`^blast-t: afxdp: afxdp: transmit on %s, %d queue`, regexp.QuoteMeta(lab.A.Iface), tc.queues))
			out, _ := lab.B.Command("ip", "-o", "link", "show", "dev", lab.B.Iface).Output()
			if strings.Contains(string(out), " xdp") {
				t.Errorf("an XDP program is still attached to %s: %s", lab.B.Iface, out)
			}
		})
	}
}
