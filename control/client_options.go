package control

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
)

// The limits of the client options iperf3 checks (iperf_api.h).
const (
	// DefaultRcvTimeout is how long iperf3's client waits for data while
	// it receives before it gives up (DEFAULT_NO_MSG_RCVD_TIMEOUT).
	DefaultRcvTimeout = 120 * time.Second
	// MinRcvTimeout is the shortest --rcv-timeout (MIN_NO_MSG_RCVD_TIMEOUT).
	MinRcvTimeout = 100 * time.Millisecond
)

// ErrNoData ends a test whose receiving streams got nothing for the
// receive timeout (iperf3's IENOMSG).
var ErrNoData = errors.New("idle timeout for receiving data")

// receives reports whether the client receives on some stream.
func (c *Config) receives() bool { return c.Reverse || c.Bidir }

// sends reports whether the client sends on some stream.
func (c *Config) sends() bool { return !c.Reverse }

// validateClientOptions checks the options iperf3 3.17 to 3.21 clients
// have, in iperf3's words where it has some.
func (c *Config) validateClientOptions() error {
	streams := c.Parallel
	if c.Bidir {
		streams *= 2
	}
	switch {
	case c.Bind.IsValid() && c.Family == "4" && !c.Bind.Unmap().Is4():
		return fmt.Errorf("-B %s is an IPv6 address and -4 asks for IPv4", c.Bind)
	case c.Bind.IsValid() && c.Family == "6" && c.Bind.Is4():
		return fmt.Errorf("-B %s is an IPv4 address and -6 asks for IPv6", c.Bind)
	case c.CPort < 0 || c.CPort > 65535:
		return fmt.Errorf("--cport %d: port number must be between 1 and 65535 inclusive", c.CPort)
	case c.CPort > 0 && c.CPort+streams-1 > 65535:
		return fmt.Errorf("--cport %d: the %d streams take ports %d to %d, beyond 65535", c.CPort, streams, c.CPort, c.CPort+streams-1)
	case c.ServerAffinity != nil && (*c.ServerAffinity < 0 || *c.ServerAffinity > wire.MaxServerAffinity):
		return fmt.Errorf("-A ...,%d: the server's CPU must be 0 to %d", *c.ServerAffinity, wire.MaxServerAffinity)
	case c.File != "" && c.UDP:
		return fmt.Errorf("-F %s: cannot transfer file using UDP (iperf3 refuses it too: the datagram header would overwrite the file's bytes)", c.File)
	case c.File != "" && c.Bidir:
		return fmt.Errorf("-F %s with --bidir: one file cannot be both what the client sends and where it writes what it receives", c.File)
	case c.File != "" && c.Reverse && c.Parallel > 1:
		return fmt.Errorf("-F %s with -R -P %d: %d streams would write over each other in one file (iperf3 lets them); receive a file with -P 1", c.File, c.Parallel, c.Parallel)
	case c.File != "" && c.Reverse && c.SkipRxCopy:
		return fmt.Errorf("-F %s with --skip-rx-copy: MSG_TRUNC discards the bytes the file should get", c.File)
	case c.FlowLabel < 0 || c.FlowLabel > engine.MaxFlowLabel:
		return fmt.Errorf("-L %#x: unable to set IPv6 flow label: it must be 1 to %#x (20 bits)", c.FlowLabel, engine.MaxFlowLabel)
	case c.FlowLabel > 0 && (c.Family == "4" || c.Bind.Is4()):
		return fmt.Errorf("-L %#x: unable to set IPv6 flow label: the flow label is IPv6's, and the test is IPv4", c.FlowLabel)
	case c.RepeatingPayload && c.File == "" && !c.UDP && (c.ZeroCopy || c.Backend == "sendfile"):
		return errors.New("--repeating-payload with -Z: sendfile sends blast's pattern from memory and cannot send iperf3's payload; drop -Z, or use --backend splice")
	case c.RcvTimeout != 0 && !c.receives():
		return errors.New("--rcv-timeout: client receive timeout is valid only in receiving mode (-R or --bidir)")
	case c.RcvTimeout != 0 && (c.RcvTimeout < MinRcvTimeout || c.RcvTimeout > wire.MaxTime*time.Second):
		return fmt.Errorf("--rcv-timeout %d: receive timeout value is incorrect or not in range (%d to %d ms)", c.RcvTimeout.Milliseconds(), MinRcvTimeout.Milliseconds(), wire.MaxTime*1000)
	case c.ConnectTimeout < 0 || c.ConnectTimeout > wire.MaxTime*time.Second:
		return fmt.Errorf("--connect-timeout %d: must be 0 (the system's) to %d ms", c.ConnectTimeout.Milliseconds(), wire.MaxTime*1000)
	case c.SndTimeout < 0 || c.SndTimeout > wire.MaxTime*time.Second:
		return fmt.Errorf("--snd-timeout %d: send timeout value is incorrect or not in range (0 to %d ms)", c.SndTimeout.Milliseconds(), wire.MaxTime*1000)
	case c.KeepAlive != nil && c.KeepAlive.Idle > 0 && c.KeepAlive.Count > 0 && c.KeepAlive.Interval > 0 &&
		c.KeepAlive.Idle <= time.Duration(c.KeepAlive.Count)*c.KeepAlive.Interval:
		return fmt.Errorf("--cntl-ka=%d/%d/%d: control connection Keepalive period should be larger than the full retry period (interval * count)",
			int(c.KeepAlive.Idle.Seconds()), int(c.KeepAlive.Interval.Seconds()), c.KeepAlive.Count)
	case c.SkipRxCopy && c.RxBackend != "trunc":
		return fmt.Errorf("--skip-rx-copy and --rx-backend %s: --skip-rx-copy receives with MSG_TRUNC, the trunc backend", c.RxBackend)
	case c.GSRO && c.UDP && c.Backend != "mmsg" && mmsgUsable():
		return fmt.Errorf("--gsro and --backend %s: --gsro sends with UDP GSO, the mmsg backend (mmsg:gso,gro)", c.Backend)
	case c.GSRO && c.UDP && c.RxBackend != "" && c.RxBackend != "mmsg":
		return fmt.Errorf("--gsro and --rx-backend %s: --gsro receives with UDP GRO, the mmsg backend (mmsg:gso,gro)", c.RxBackend)
	case c.MPTCP && c.UDP:
		return errors.New("-m and -u: MPTCP is Multipath TCP; drop -u, or -m")
	case c.Debug != nil && (c.DebugLevel < 1 || c.DebugLevel > 4):
		return fmt.Errorf("-d %d: the debug level is 1 to 4", c.DebugLevel)
	}
	for _, cpu := range c.Affinity {
		if cpu < 0 || cpu > engine.MaxCPU {
			return fmt.Errorf("-A %d: the CPU must be 0 to %d", cpu, engine.MaxCPU)
		}
	}
	return nil
}

func mmsgUsable() bool {
	_, err := engine.Usable("mmsg")
	return err == nil
}

// gsroDefaults makes sure --gsro's UDP backend sends with GSO and
// receives with GRO.
func (c *Config) gsroDefaults() {
	if !c.GSRO || !c.UDP || c.Backend != "mmsg" {
		return
	}
	have := names(c.BackendOptions)
	for _, o := range []string{"gso", "gro"} {
		if !have[o] {
			if c.BackendOptions != "" {
				c.BackendOptions += ","
			}
			c.BackendOptions += o
		}
	}
}

// clientParams adds the parameters of the client options to p.
func (c *Config) clientParams(p *wire.Params) {
	if c.ServerAffinity != nil {
		a := wire.Int(*c.ServerAffinity)
		p.ServerAffinity = &a
	}
	p.FlowLabel = wire.Int(c.FlowLabel)
	if c.RepeatingPayload {
		p.RepeatingPayload = 1
	}
	p.ExtraData = c.ExtraData
	if c.SkipRxCopy {
		p.SkipRxCopy = 1
	}
	p.MPTCP = wire.Flag(c.MPTCP)
	if c.GSRO && c.UDP {
		// As iperf3 3.21: datagrams of the block size, GSO buffers of as
		// many as fit in the largest datagram, GRO buffers that large.
		blk := c.BlockLen
		if blk <= 0 {
			blk = wire.DefaultUDPBlock
		}
		p.GSO, p.GSODgSize, p.GSOBfSize = 1, wire.Int(blk), wire.Int(wire.MaxUDPBlock/blk*blk)
		p.GRO, p.GROBfSize = 1, wire.MaxUDPBlock
	}
}

// dialer is the control connection's dialer: -B's address, the
// interface, TCP_NODELAY and TCP_USER_TIMEOUT (ctrlControl), keepalive.
func (cl *client) dialer() *net.Dialer {
	cfg := &cl.cfg
	d := &net.Dialer{Timeout: cfg.ConnectTimeout}
	if cfg.Bind.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: cfg.Bind.AsSlice(), Zone: cfg.Bind.Zone()}
	}
	if cfg.KeepAlive != nil {
		d.KeepAliveConfig = *cfg.KeepAlive
		d.KeepAliveConfig.Enable = true
	}
	if cfg.BindDev != "" || cfg.SndTimeout > 0 {
		d.Control = ctrlControl(cfg.BindDev, cfg.SndTimeout)
	}
	return d
}

// dataSockOptsFor adds the client's own options to the data streams'
// socket options: the interface, MPTCP, the flow label.
func (cl *client) dataSockOptsFor(so engine.SockOpts) engine.SockOpts {
	cfg := &cl.cfg
	so.Device = cfg.BindDev
	so.MPTCP = cfg.MPTCP && !cfg.UDP
	so.FlowLabel = uint32(cfg.FlowLabel)
	return so
}

// localAddr is where data stream i (sending streams first) binds: -B's
// address and --cport's numbering; zero when neither is given.
func (cl *client) localAddr(i int, peer netip.Addr) (netip.AddrPort, error) {
	cfg := &cl.cfg
	if !cfg.Bind.IsValid() && cfg.CPort == 0 {
		return netip.AddrPort{}, nil
	}
	a := cfg.Bind
	switch {
	case !a.IsValid() && peer.Is4():
		a = netip.IPv4Unspecified()
	case !a.IsValid():
		a = netip.IPv6Unspecified()
	case a.Unmap().Is4() != peer.Is4():
		return netip.AddrPort{}, fmt.Errorf("-B %s and the server's address %s are of different families: bind an address of the server's family, or add -4 or -6", cfg.Bind, peer)
	}
	port := 0
	if cfg.CPort > 0 {
		port = cfg.CPort + i
	}
	return netip.AddrPortFrom(a, uint16(port)), nil
}

// ParseBind reads iperf3's -B and -c host argument: an address or name,
// then optionally "%" and an interface. An IPv6 link-local address keeps
// the interface as its zone; anywhere else "%DEV" means --bind-dev DEV.
func ParseBind(s string) (host, dev string) {
	h, d, ok := strings.Cut(s, "%")
	if !ok || d == "" {
		return s, ""
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Is6() && (a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast()) {
		return s, ""
	}
	return h, d
}

// ParseKeepAlive reads --cntl-ka's value, KEEPIDLE/KEEPINTV/KEEPCNT with
// each part optional ("" or "//" keeps all three of the system's): seconds,
// seconds, a count. A part left out is -1 in the result.
func ParseKeepAlive(s string) (*net.KeepAliveConfig, error) {
	ka := &net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}
	parts := strings.Split(s, "/")
	if len(parts) > 3 {
		return nil, fmt.Errorf("--cntl-ka=%s: want KEEPIDLE/KEEPINTV/KEEPCNT, each optional", s)
	}
	for i, p := range parts {
		if p == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscan(p, &n); err != nil || n < 1 || n > 32767 || fmt.Sprint(n) != p {
			return nil, fmt.Errorf("--cntl-ka=%s: %q is not a whole number from 1 to 32767", s, p)
		}
		switch i {
		case 0:
			ka.Idle = time.Duration(n) * time.Second
		case 1:
			ka.Interval = time.Duration(n) * time.Second
		case 2:
			ka.Count = n
		}
	}
	return ka, nil
}
