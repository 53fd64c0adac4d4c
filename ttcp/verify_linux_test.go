package ttcp_test

import (
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/internal/verify/verifytest"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
	"github.com/blastnet/blast/ttcp"
)

// --verify in ttcp mode, both ends in the test process over 127.0.0.1.
func TestVerifyTTCPLoopback(t *testing.T) {
	for _, tc := range []struct {
		name           string
		rx, tx         func(c *ttcp.Config)
		rxLine, txLine string
		rxErr          string
	}{
		{name: "tcp",
			rx:     func(c *ttcp.Config) { c.Verify, c.SinkMode, c.BufLen = true, true, 4000 },
			tx:     func(c *ttcp.Config) { c.Verify, c.SinkMode, c.BufLen, c.NBuf = true, true, 4000, 1000 },
			rxLine: "blast-r: verify: 1000 blocks ok, 0 corrupt, 0 missing, 0 duplicate, 0 reordered\n",
			txLine: "blast-t: verify: 1000 blocks of 4000 bytes sent, numbered 0 to 999\n"},
		{name: "tcp iouring",
			rx: func(c *ttcp.Config) { c.Verify, c.SinkMode, c.BufLen, c.Backend = true, true, 65536, "iouring" },
			tx: func(c *ttcp.Config) {
				c.Verify, c.SinkMode, c.BufLen, c.NBuf, c.Backend = true, true, 65536, 300, "zerocopy"
			},
			rxLine: "blast-r: verify: 300 blocks ok, 0 corrupt, 0 missing, 0 duplicate, 0 reordered\n"},
		{name: "udp",
			rx: func(c *ttcp.Config) { c.Verify, c.SinkMode, c.UDP, c.BufLen, c.SockBuf = true, true, true, 1400, 4<<20 },
			tx: func(c *ttcp.Config) {
				c.Verify, c.SinkMode, c.UDP, c.BufLen, c.NBuf, c.Rate = true, true, true, 1400, 500, 100e6
			},
			rxLine: "blast-r: verify: 500 blocks ok, 0 corrupt, 0 missing, 0 duplicate, 0 reordered\n",
			txLine: "blast-t: verify: 500 blocks of 1400 bytes sent, numbered 0 to 499\n"},
		{name: "udp mmsg gso gro",
			rx: func(c *ttcp.Config) {
				c.Verify, c.SinkMode, c.UDP, c.BufLen, c.SockBuf, c.Backend, c.BackendOpts = true, true, true, 1400, 4<<20, "mmsg", "gro"
			},
			tx: func(c *ttcp.Config) {
				c.Verify, c.SinkMode, c.UDP, c.BufLen, c.NBuf, c.Rate, c.Backend, c.BackendOpts = true, true, true, 1400, 2000, 200e6, "mmsg", "gso"
			},
			rxLine: "blast-r: verify: 2000 blocks ok, 0 corrupt, 0 missing, 0 duplicate, 0 reordered\n"},
		{name: "block lengths differ",
			rx:    func(c *ttcp.Config) { c.Verify, c.SinkMode, c.BufLen = true, true, 4096 },
			tx:    func(c *ttcp.Config) { c.Verify, c.SinkMode, c.BufLen, c.NBuf = true, true, 4000, 100 },
			rxErr: "verify: 98 blocks received: 98 corrupt: the sender's blocks are 4000 bytes and this end expects 4096: give both ends the same block length (-l)"},
		{name: "sender without --verify",
			rx:    func(c *ttcp.Config) { c.Verify, c.SinkMode = true, true },
			tx:    func(c *ttcp.Config) { c.SinkMode, c.NBuf = true, 10 },
			rxErr: "no block carried a --verify header: does the sender run with --verify?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := testkit.FreePort(t)
			rx := listening(t, config(false, port, tc.rx))
			tx := start(t, config(true, port, func(c *ttcp.Config) { c.Host = "127.0.0.1"; tc.tx(c) }))
			tx.wait(t)
			if tc.rxErr != "" {
				<-rx.done
				if rx.err == nil || !strings.Contains(rx.err.Error(), tc.rxErr) {
					t.Fatalf("receiver error %v, want %q\nstdout:\n%s", rx.err, tc.rxErr, rx.out.String())
				}
				return
			}
			rx.wait(t)
			if !strings.Contains(rx.out.String(), tc.rxLine) {
				t.Errorf("receiver lacks %q:\n%s", tc.rxLine, rx.out.String())
			}
			if tc.txLine != "" && !strings.Contains(tx.out.String(), tc.txLine) {
				t.Errorf("transmitter lacks %q:\n%s", tc.txLine, tx.out.String())
			}
		})
	}
}

func TestVerifyTTCPUsage(t *testing.T) {
	for _, tc := range []struct {
		set  func(c *ttcp.Config)
		want string
	}{
		{func(c *ttcp.Config) { c.Blocks = true }, "--verify checks the received blocks and discards them, and -B writes them out: drop -B"},
		{func(c *ttcp.Config) { c.Transmit, c.Host, c.File = true, "h", "/etc/hostname" }, "--verify sends generated blocks and -F /etc/hostname sends a file: choose one"},
		{func(c *ttcp.Config) { c.SinkMode = false }, "--verify sends and checks generated blocks in place of -s's pattern: add -s"},
		{func(c *ttcp.Config) { c.BufLen = 23 }, "-l 23: --verify needs blocks of at least 24 bytes"},
		{func(c *ttcp.Config) { c.Transmit, c.Host, c.Backend = true, "h", "sendfile" }, "--verify: sendfile sends from a file"},
		{func(c *ttcp.Config) { c.Backend = "trunc" }, "--verify: trunc discards what it receives without reading it"},
		{func(c *ttcp.Config) { c.Transmit, c.Host, c.UDP, c.Backend = true, "h", true, "afxdp" }, "--verify with --backend afxdp: afxdp sends generated datagrams only"},
	} {
		c := ttcp.Defaults()
		c.Verify, c.SinkMode = true, true
		tc.set(&c)
		err := c.Validate()
		if err == nil || !ttcp.IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate = %v, want a usage error with %q", c, err, tc.want)
		}
	}
}

var verifyLine = regexp.MustCompile(`(?m)^blast-r: verify: (\d+) blocks ok, (\d+) corrupt(?: \((.*?)\))?, (\d+) missing, (\d+) duplicate, (\d+) reordered$`)

// verifyCounts reads the receiver's verify line: blocks ok, corrupt,
// missing, and the faults described.
func verifyCounts(t *testing.T, out string) (ok, corrupt, missing int64, faults string) {
	t.Helper()
	m := verifyLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no verify line in:\n%s", out)
	}
	n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	return n(m[1]), n(m[2]), n(m[4]), m[3]
}

// A lab where host A's veth flips a byte in some packets and fixes their
// checksum: the receiver's kernel takes them, and only --verify sees it.
// The same runs without the plant are clean, with every block counted.
func TestVerifyTTCPLab(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	addr := lab.B.Addr4.String()
	for _, tc := range []struct {
		name    string
		udp     bool
		corrupt bool
	}{
		{"tcp clean", false, false},
		{"tcp corrupt", false, true},
		{"udp clean", true, false},
		{"udp corrupt", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var planted func() uint64
			if tc.corrupt {
				proto := verifytest.TCP
				if tc.udp {
					proto = verifytest.UDP
				}
				planted = verifytest.Corrupt(t, lab.A, verifytest.Plant{Proto: proto, Every: 4})
			}
			blocks, blockLen := 2000, 8192
			if tc.udp {
				blockLen = 1400 // one datagram, one packet: no IP fragments
			}
			rxArgs := []string{"-r", "--verify", "-l", strconv.Itoa(blockLen)}
			txArgs := []string{"-t", "--verify", "-l", strconv.Itoa(blockLen), "-n", strconv.Itoa(blocks)}
			network := "tcp"
			if tc.udp {
				network = "udp"
				rxArgs = append(rxArgs, "-u", "-b", "8388608")
				txArgs = append(txArgs, "-u", "--rate", "200M")
			}
			rx := blasttest.Listening(t, lab.B, network, 5001, blasttest.Bin, rxArgs...)
			tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, append(txArgs, addr)...)
			tx.Wait(t)
			rxErr := rx.WaitErr(time.Minute)
			ok, corrupt, missing, faults := verifyCounts(t, rx.Stdout.String())
			if !tc.corrupt {
				if rxErr != nil || ok != int64(blocks) || corrupt != 0 || missing != 0 {
					t.Fatalf("clean run: %v, %d ok, %d corrupt, %d missing; want %d ok (bytes / block length)\nstdout:\n%s\nstderr:\n%s",
						rxErr, ok, corrupt, missing, blocks, rx.Stdout.String(), rx.Stderr.String())
				}
				return
			}
			n := planted()
			if n == 0 {
				t.Fatal("the plant corrupted no packet")
			}
			var exit *exec.ExitError
			if !errors.As(rxErr, &exit) || exit.ExitCode() != 1 {
				t.Errorf("receiver ended with %v, want exit status 1", rxErr)
			}
			if corrupt == 0 || corrupt > int64(n) || ok+corrupt != int64(blocks) || missing != 0 {
				t.Errorf("%d packets corrupted: receiver counts %d ok, %d corrupt, %d missing, want 0 < corrupt <= %d, %d in all",
					n, ok, corrupt, missing, n, blocks)
			}
			if tc.udp {
				// One datagram, one packet, one block: each corrupted
				// packet is one corrupt block, at the plant's offset.
				if corrupt != int64(n) {
					t.Errorf("%d datagrams corrupted, %d corrupt blocks", n, corrupt)
				}
				if !strings.Contains(faults, "at byte "+strconv.Itoa(verifytest.PayloadOffset)) {
					t.Errorf("faults %q do not name byte %d", faults, verifytest.PayloadOffset)
				}
			}
			want := regexp.MustCompile(`^blast-r: verify: ` + strconv.Itoa(blocks) + ` blocks received: \d+ corrupt \(block \d+ at byte \d+.*\)\n$`)
			if lines := strings.SplitAfter(rx.Stderr.String(), "\n"); !want.MatchString(lines[len(lines)-2]) {
				t.Errorf("receiver's last error line %q, want one naming the corrupt blocks", lines[len(lines)-2])
			}
		})
	}
}
