// Package ttcp is blast's classic ttcp mode: one connection, no control
// channel, wire-compatible with ttcp (a plain TCP stream to port 5001, or
// UDP framed by ttcp's 4-byte start and end sentinel datagrams), printing
// ttcp's lines in ttcp's formats followed by blast's own.
//
// The transmitter sends a pattern (sink/source mode, -s) or its standard
// input; the receiver discards or writes to its standard output, byte for
// byte (with -B, in whole -l blocks only). When standard output carries
// data every report line goes to standard error.
//
// The receiver listens and the transmitter connects, as in ttcp; with -R
// (mcr/ttcp's reverse) the transmitter listens and the receiver connects.
// Either way the progress lines come in ttcp's order: socket, sndbuf or
// rcvbuf, then nodelay and connect on the side that connects, or
// "accept from" on the side that listens.
package ttcp

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/blastnet/blast/engine"
)

// Defaults are ttcp's.
const (
	DefaultBufLen = 8192
	DefaultNBuf   = 2048
	DefaultPort   = 5001
	DefaultAlign  = 16384
	// sentinel is the size of UDP start/end datagrams: anything this
	// small or smaller is a sentinel, never data.
	sentinel = 4
)

// Bounds on the numbers of the command line, so that a mistyped one fails
// in words before anything is allocated (ttcp itself has none: -l
// 99999999999 runs it out of memory).
const (
	// MaxBufLen bounds -l for TCP (UDP's is MaxUDPLen): one buffer of
	// 64 MiB, far past where larger writes stop paying (a TCP socket
	// buffer is a few MiB).
	MaxBufLen = 64 << 20
	// MaxUDPLen is the largest UDP payload over IPv4.
	MaxUDPLen = 65507
	// MaxBufMem bounds the buffers one end holds at once: -l times what
	// the backend keeps in flight (iouring's batch, mmsg's batch of GSO
	// trains; engine.Footprint).
	MaxBufMem = 256 << 20
	// MaxAlign bounds -A and -O.
	MaxAlign = MaxBufLen
	// MaxSockBuf bounds -b: setsockopt takes a C int.
	MaxSockBuf = math.MaxInt32
	// MaxRate bounds --rate, 10 Tbit/s.
	MaxRate = 10e12
)

// Config is one ttcp run.
type Config struct {
	Transmit bool   // -t; false is -r
	Host     string // the peer to connect to: the receiver for -t, the transmitter for -r -R
	Port     int    // -p
	UDP      bool   // -u
	SinkMode bool   // -s: pattern out, discard in
	BufLen   int    // -l
	NBuf     int    // -n
	Align    int    // -A
	Offset   int    // -O
	SockBuf  int    // -b: SO_SNDBUF (-t) or SO_RCVBUF (-r)
	NoDelay  bool   // -D
	Debug    bool   // -d: SO_DEBUG on the TCP socket
	Blocks   bool   // -B: write only whole -l blocks to standard output
	Reverse  bool   // -R: the receiver connects, the transmitter listens
	Format   byte   // -f: k K m M g G
	Touch    bool   // -T
	Verbose  bool   // -v
	TOS      int    // -S; -1 leaves it
	Family   int    // 0 (either), 4 or 6
	Backend  string // --backend NAME[:OPTS]
	// BackendOpts are the options after the colon of --backend
	// (batch=64,gso ...), as written; -F and --dst-mac add to them.
	BackendOpts string
	// DstMAC is --dst-mac: the afxdp transmitter's destination MAC.
	DstMAC string
	// File is -F: the transmitter sends this file, with the sendfile or
	// splice backend, instead of the pattern or standard input.
	File   string
	Rate   float64
	Device string // -I
	// Verify is --verify: numbered, checksummed -l blocks instead of the
	// pattern, which the receiver checks (internal/verify). It needs -s.
	Verify bool
	// Prog is the name lines start with: "ttcp" or "blast".
	Prog string

	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Defaults returns ttcp's defaults.
func Defaults() Config {
	return Config{Port: DefaultPort, BufLen: DefaultBufLen, NBuf: DefaultNBuf, Align: DefaultAlign,
		Format: 'K', TOS: -1, Backend: engine.DefaultBackend, Prog: "blast"}
}

// UsageError is a problem with the command line: the caller exits 2.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// IsUsage reports whether err is a usage error.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// Validate checks c before any socket is made.
func (c *Config) Validate() error {
	if err := c.validateVerify(); err != nil {
		return err
	}
	p := c.Prog
	switch {
	case c.Transmit && !c.Reverse && c.Host == "":
		return usagef("-t needs the receiver's host: %s -t [options] HOST", p)
	case !c.Transmit && !c.Reverse && c.Host != "":
		return usagef("-r takes no host (got %q): the receiver listens on port %d; give the host to the transmitter (-t), or add -R to connect to a transmitter that listens (%s -t -R)", c.Host, c.Port, p)
	case c.Transmit && c.Reverse && c.Host != "":
		return usagef("-t -R takes no host (got %q): the transmitter listens on port %d for the receiver; give the host to the receiver (%s -r -R HOST)", c.Host, c.Port, p)
	case !c.Transmit && c.Reverse && c.Host == "":
		return usagef("-r -R needs the transmitter's host: %s -r -R [options] HOST connects to a transmitter started with %s -t -R", p, p)
	case c.Reverse && c.UDP:
		return usagef("-R reverses who connects, and ttcp's UDP mode has no connection: drop -R or -u")
	case c.Debug && c.UDP:
		return usagef("-d sets SO_DEBUG on ttcp's TCP socket (ttcp never sets it on UDP): drop -d or -u")
	case c.Blocks && c.Transmit:
		return usagef("-B writes received data in whole -l blocks: it is for the receiver (-r), not the transmitter")
	case c.Blocks && c.SinkMode:
		return usagef("-B writes whole -l blocks to standard output, and -s discards the data: drop -B or -s")
	case c.BufLen < 1:
		return usagef("-l %d: the buffer length must be at least 1 byte", c.BufLen)
	case c.UDP && c.BufLen > MaxUDPLen:
		return usagef("-l %d: a UDP datagram carries at most %d bytes", c.BufLen, MaxUDPLen)
	case c.BufLen > MaxBufLen:
		return usagef("-l %d: the buffer length must be 1 to %d (64 MiB) for TCP: give a smaller -l", c.BufLen, MaxBufLen)
	case c.NBuf < 1:
		return usagef("-n %d: the number of buffers must be at least 1", c.NBuf)
	case int64(c.NBuf) > math.MaxInt64/int64(c.BufLen):
		return usagef("-n %d: %d buffers of -l %d bytes are more than 8 EiB: -n must be 1 to %d", c.NBuf, c.NBuf, c.BufLen, math.MaxInt64/int64(c.BufLen))
	case c.Port < 1 || c.Port > 65535:
		return usagef("-p %d: a port is a number from 1 to 65535", c.Port)
	case c.SockBuf < 0 || c.SockBuf > MaxSockBuf:
		return usagef("-b %d: the socket buffer size must be 0 (the system's) to %d bytes", c.SockBuf, MaxSockBuf)
	case c.Align < 0 || c.Align > MaxAlign:
		return usagef("-A %d: the buffer alignment must be 0 to %d bytes", c.Align, MaxAlign)
	case c.Offset < 0 || c.Offset > MaxAlign:
		return usagef("-O %d: the buffer offset must be 0 to %d bytes", c.Offset, MaxAlign)
	case !strings.ContainsRune("kKmMgG", rune(c.Format)) || c.Format == 0:
		return usagef("-f %c: unknown format: use k, m, g (kilo/mega/gigabits) or K, M, G (bytes)", c.Format)
	case c.NoDelay && c.UDP:
		return usagef("-D sets TCP_NODELAY, which UDP does not have: drop -D or -u")
	case c.UDP && !c.SinkMode:
		return usagef("-u needs -s: ttcp's UDP mode sends a pattern and cannot carry standard input (datagrams of %d bytes or fewer are its sentinels); use TCP to send data", sentinel)
	case c.TOS < -1 || c.TOS > 255:
		return usagef("-S %#x: the TOS byte is 0 to 255", c.TOS)
	case !(c.Rate >= 0 && c.Rate <= MaxRate): // NaN too
		return usagef("--rate %g: must be 0 (unlimited) to 10T bits/s", c.Rate)
	case c.Family != 0 && c.Family != 4 && c.Family != 6:
		return usagef("address family %d: use -4 or -6", c.Family)
	}
	b, err := engine.Lookup(c.Backend)
	if err != nil {
		return usagef("--backend: %v", err)
	}
	o, err := engine.ParseOptions(b.Name(), engine.OptionsOf(b), c.BackendOpts)
	if err != nil {
		return usagef("--backend: %v", err)
	}
	if c.DstMAC != "" && o.Has("dstmac") && o.Text("dstmac") != c.DstMAC {
		return usagef("--dst-mac %s and --backend %s:%s conflict: name the MAC once", c.DstMAC, c.Backend, c.BackendOpts)
	}
	if c.File != "" && o.Has("file") && o.Text("file") != c.File {
		return usagef("-F %s and --backend %s:file=%s conflict: name the file once", c.File, c.Backend, o.Text("file"))
	}
	if c.File != "" {
		if err := c.validateFile(); err != nil {
			return err
		}
	}
	cb, _, err := engine.Configure(b, c.options())
	if err != nil {
		return usagef("--backend: %v", err)
	}
	return c.validateMemory(cb)
}

// validateMemory checks what the buffers of this end take on backend b:
// -l times the buffers the backend keeps in flight, at most MaxBufMem.
func (c *Config) validateMemory(b engine.Backend) error {
	spec := &engine.Spec{Protocol: engine.TCP, BufLen: c.BufLen}
	if c.UDP {
		spec.Protocol = engine.UDP
	}
	n := engine.Footprint(b, spec, c.Transmit)
	if n <= MaxBufMem {
		return nil
	}
	spelled := c.Backend
	if o := c.options(); o != "" {
		spelled += ":" + o
	}
	return usagef("-l %d with --backend %s: its buffers would take %d MiB (-l times the buffers the backend keeps in flight), more than %d MiB: give a smaller -l or batch=",
		c.BufLen, spelled, (n+(1<<20)-1)>>20, MaxBufMem>>20)
}

// validateFile checks -F.
func (c *Config) validateFile() error {
	switch {
	case !c.Transmit:
		return usagef("-F %s: only the transmitter (-t) sends a file; the receiver writes to standard output without -s", c.File)
	case c.SinkMode:
		return usagef("-F %s and -s conflict: -s sends a pattern, -F sends the file; choose one", c.File)
	case c.UDP:
		return usagef("-F %s sends a TCP stream with sendfile or splice: drop -u", c.File)
	case c.Backend != "sendfile" && c.Backend != "splice":
		return usagef("-F %s needs --backend sendfile or --backend splice (got %s); other backends send a file given on standard input (< %s)", c.File, c.Backend, c.File)
	}
	fi, err := os.Stat(c.File)
	switch {
	case err != nil:
		return usagef("-F %s: %v", c.File, errors.Unwrap(err))
	case !fi.Mode().IsRegular():
		return usagef("-F %s: not a regular file (sendfile and splice read from files; pipe anything else to standard input)", c.File)
	}
	return nil
}

// options are the backend's options as written, -F and --dst-mac
// included.
func (c *Config) options() string {
	o := []string{}
	if c.BackendOpts != "" {
		o = append(o, c.BackendOpts)
	}
	if c.File != "" && !strings.Contains(c.BackendOpts, "file=") {
		o = append(o, "file="+strings.ReplaceAll(c.File, ",", `\,`))
	}
	if c.DstMAC != "" && !strings.Contains(c.BackendOpts, "dstmac=") {
		o = append(o, "dstmac="+c.DstMAC)
	}
	return strings.Join(o, ",")
}

// SendsFile reports whether the transmitter sends a file named by -F or
// the file option, which the backend reads itself.
func (c *Config) SendsFile() bool {
	return c.Transmit && (c.File != "" || strings.Contains(c.BackendOpts, "file="))
}

func (c *Config) prefix() string {
	if c.Transmit {
		return c.Prog + "-t"
	}
	return c.Prog + "-r"
}

// dataOnStdout reports whether standard output carries received data.
func (c *Config) dataOnStdout() bool { return !c.Transmit && !c.SinkMode }

// connects reports whether this end connects (ttcp's "initiate"): the
// transmitter, or with -R the receiver. UDP has no -R.
func (c *Config) connects() bool { return c.Transmit != c.Reverse }

// peer names the other end, and the command that starts it listening
// on this port.
func (c *Config) peer() (name, start string) {
	if c.Transmit {
		return "receiver", fmt.Sprintf("%s -r -p %d", c.Prog, c.Port)
	}
	return "transmitter", fmt.Sprintf("%s -t -R -p %d", c.Prog, c.Port)
}

func (c *Config) network() string {
	n := "tcp"
	if c.UDP {
		n = "udp"
	}
	if c.Family != 0 {
		n += fmt.Sprint(c.Family)
	}
	return n
}
