package afxdp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/bpf"
	"github.com/blastnet/blast/engine"
)

// Backend moves UDP datagrams through AF_XDP sockets. The zero value is
// what `--backend afxdp` runs: one TX queue, every RX queue, copy mode,
// batches of 256, the interface and MAC addresses from the route and
// neighbour tables. engine/backends registers it.
//
// Options (engine.Configurable): batch=N, zc, queues=N, threads=N and
// dstmac=MAC set the fields below. The interface is also the flow
// socket's SO_BINDTODEVICE (ttcp's -I).
type Backend struct {
	// Iface overrides the interface; empty: the flow socket's
	// SO_BINDTODEVICE, else the route's (sender) or the one holding the
	// bind address (receiver).
	Iface string
	// DstMAC overrides the destination MAC address (--dst-mac, dstmac=).
	DstMAC net.HardwareAddr
	// Queues is the number of TX queues a sender uses, one socket each
	// (0: 1; queues=N). A receiver always binds every RX queue in use.
	Queues int
	// Threads is the number of sending threads, spread over the queues,
	// each with a socket of its own (threads=N; 0: see threads).
	Threads int
	// Batch is the number of descriptors moved per ring batch (0: 256;
	// batch=N).
	Batch int
	// ZeroCopy asks the driver for zero-copy mode (zc); without it the
	// sockets bind in copy mode.
	ZeroCopy bool
	// NativeOnly refuses the generic-mode (skb) attach that is otherwise
	// the fallback where the driver has no native XDP.
	NativeOnly bool
}

var (
	_ engine.Backend      = Backend{}
	_ engine.Configurable = Backend{}
	_ engine.Preparer     = Backend{}
)

// The bounds of the options.
const (
	defaultBatch = 256
	maxBatch     = 1024
	maxQueues    = 64
	maxThreads   = 256
)

// Name implements engine.Backend.
func (Backend) Name() string { return "afxdp" }

// Options implements engine.Configurable.
func (Backend) Options() []engine.Option {
	return []engine.Option{
		{Name: "batch", Kind: engine.Count, Default: fmt.Sprint(defaultBatch),
			Help: fmt.Sprintf("descriptors moved per ring batch (at most %d)", maxBatch)},
		{Name: "zc", Kind: engine.Flag, Default: "copy mode",
			Help: "ask the driver for zero-copy mode; fails where it has none (veth and other virtual devices)"},
		{Name: "queues", Kind: engine.Count, Default: "1 TX queue; a receiver binds every RX queue",
			Help: fmt.Sprintf("TX queues a sender uses, one AF_XDP socket each (at most %d)", maxQueues)},
		{Name: "threads", Kind: engine.Count, Default: "one per queue when paced or zero-copy, else one per CPU, at most 4 per queue",
			Help: fmt.Sprintf("sending threads, spread over the queues, each with a socket of its own (at most %d)", maxThreads)},
		{Name: "dstmac", Kind: engine.MAC, Default: "the next hop's, from the neighbour table",
			Help: "destination MAC address of the frames sent"},
	}
}

// Configure implements engine.Configurable.
func (b Backend) Configure(o engine.Options) (engine.Backend, error) {
	if n := o.Count("batch", 0); n > maxBatch {
		return nil, fmt.Errorf("backend afxdp option batch=%d: at most %d", n, maxBatch)
	} else if n > 0 {
		b.Batch = n
	}
	if o.Flag("zc") {
		b.ZeroCopy = true
	}
	if n := o.Count("queues", 0); n > maxQueues {
		return nil, fmt.Errorf("backend afxdp option queues=%d: at most %d", n, maxQueues)
	} else if n > 0 {
		b.Queues = n
	}
	if n := o.Count("threads", 0); n > maxThreads {
		return nil, fmt.Errorf("backend afxdp option threads=%d: at most %d", n, maxThreads)
	} else if n > 0 {
		b.Threads = n
	}
	if o.Has("dstmac") {
		mac, err := net.ParseMAC(o.Text("dstmac"))
		if err != nil || len(mac) != 6 {
			return nil, fmt.Errorf("backend afxdp option dstmac=%s: not an Ethernet address", o.Text("dstmac"))
		}
		b.DstMAC = mac
	}
	return b, nil
}

func (b Backend) batch() int {
	if b.Batch > 0 {
		return b.Batch
	}
	return defaultBatch
}

// Probe implements engine.Backend: the capabilities, then an AF_XDP
// socket.
func (Backend) Probe() error {
	if os.Geteuid() != 0 && !hasCaps() {
		return errNeedPriv
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.EAFNOSUPPORT):
		return fmt.Errorf("the kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS): %w", engine.ErrNotSupported)
	case err != nil:
		return fmt.Errorf("afxdp: socket: %w", privilege(err))
	}
	unix.Close(fd)
	return nil
}

// hasCaps reports whether the effective set holds CAP_NET_ADMIN, CAP_BPF
// and CAP_NET_RAW.
func hasCaps() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var d [2]unix.CapUserData
	if unix.Capget(&hdr, &d[0]) != nil {
		return false
	}
	has := func(c uint) bool { return d[c/32].Effective&(1<<(c%32)) != 0 }
	return has(unix.CAP_NET_ADMIN) && has(unix.CAP_BPF) && has(unix.CAP_NET_RAW)
}

// bpfErr makes an error of package bpf that wraps errors.ErrUnsupported
// (no privilege for BPF) wrap engine.ErrNotSupported as well.
func bpfErr(err error) error {
	return fmt.Errorf("afxdp: %w", engine.AsNotSupported(err))
}

// udpAddrs checks that f is a UDP flow and returns its socket's addresses.
func udpAddrs(f *engine.Flow) (local, remote netip.AddrPort, err error) {
	if f.Spec.Protocol != engine.UDP || f.Sock == nil || f.Sock.Protocol() != engine.UDP {
		return local, remote, fmt.Errorf("afxdp moves UDP datagrams only (TCP: use readwrite, sendfile, splice, zerocopy or iouring): %w", engine.ErrNotSupported)
	}
	return f.Sock.LocalAddr(), f.Sock.RemoteAddr(), nil
}

// Check implements engine.Checker: afxdp sends generated datagrams, and
// cannot stamp a header into each (its threads patch prebuilt frames, with
// their checksums, outside the Sender, with no place to call Stamp in send
// order); it receives any UDP flow.
func (Backend) Check(spec *engine.Spec, send bool) error {
	switch {
	case send && spec.Source != nil:
		return fmt.Errorf("afxdp sends generated datagrams only, not a data stream (use -s, or --backend mmsg): %w", engine.ErrNotSupported)
	case send && spec.Framing != nil:
		return fmt.Errorf("afxdp cannot send iperf3's datagram headers (its frames are built ahead, outside the send loop): send with mmsg, receive with afxdp (--rx-backend afxdp): %w", engine.ErrNotSupported)
	}
	return nil
}

// Send implements engine.Backend. f.Sock is a connected UDP socket: its
// addresses and ports are those of the frames; it carries nothing itself.
// The setup runs in the socket's network namespace (inSockNetns); the
// flow's thread then sends on the first socket, and threads of its own on
// the others.
func (b Backend) Send(ctx context.Context, f *engine.Flow) error {
	local, remote, err := udpAddrs(f)
	if err != nil {
		return err
	}
	if err := b.Check(f.Spec, true); err != nil {
		return err
	}
	if !remote.IsValid() {
		return errors.New("afxdp: the flow's socket is not connected")
	}
	var tx *txSetup
	if err := inSockNetns(f.Sock.FD(), func() (err error) {
		tx, err = b.setupTX(ctx, f, local, remote)
		return err
	}); err != nil {
		return err
	}
	defer closeAll(tx.socks)
	return tx.run(f)
}

// txSetup is a transmit made ready: the AF_XDP sockets bound, their frame
// pools and the senders that will run them.
type txSetup struct {
	socks   []*Socket
	pools   []*txPool
	plan    *txPlan
	senders []*sender
}

// run starts the flow's Sender and sends: senders[0] on the flow's
// thread, the others on threads of their own, all joined before it
// returns.
func (x *txSetup) run(f *engine.Flow) error {
	x.plan.s = engine.NewSender(f)
	c := txCounts{syscalls: f.Facts.Counter(engine.FactSyscalls), kicks: f.Facts.Counter("tx_kicks")}
	own := len(x.senders) - 1
	if own > 0 {
		f.Facts.Set(engine.FactOwnThreads, int64(own))
	}
	errs := make([]error, len(x.senders))
	var wg sync.WaitGroup
	for i := 1; i < len(x.senders); i++ {
		wg.Go(func() {
			// Never unlocked: the thread ends with the goroutine.
			runtime.LockOSThread()
			errs[i] = x.senders[i].run(f, c)
		})
	}
	errs[0] = x.senders[0].run(f, c)
	wg.Wait()
	var pending int64
	for _, p := range x.pools {
		pending += int64(p.pending())
	}
	if pending > 0 {
		f.Facts.Set(engine.FactPending, pending)
	}
	addStats(&f.Facts, x.socks)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if f.Cancelled() {
		return engine.ErrCancelled
	}
	return nil
}

// setupTX finds the interface and the next hop's MAC address, builds the
// frame templates and binds the sockets. It runs in the flow socket's
// network namespace (inSockNetns).
func (b Backend) setupTX(ctx context.Context, f *engine.Flow, local, remote netip.AddrPort) (_ *txSetup, err error) {
	s := f.Spec
	link, hop, err := route(remote.Addr())
	if err != nil {
		return nil, err
	}
	iface := b.Iface
	if iface == "" {
		iface = boundDevice(f.Sock.FD())
	}
	if iface != "" && iface != link.Attrs().Name {
		if link, err = netlink.LinkByName(iface); err != nil {
			return nil, fmt.Errorf("afxdp: no such interface %q: %w", iface, err)
		}
	}
	attrs := link.Attrs()
	if mtu := attrs.MTU; mtu > 0 {
		hdr := 28
		if !remote.Addr().Is4() {
			hdr = 48
		}
		if s.BufLen+hdr > mtu {
			return nil, fmt.Errorf("afxdp sends one frame per datagram: %d-byte datagrams do not fit %s's MTU of %d (at most %d)", s.BufLen, attrs.Name, mtu, mtu-hdr)
		}
	}
	dst := b.DstMAC
	if dst == nil {
		if dst, err = neighbour(ctx, link, hop); err != nil {
			return nil, err
		}
	}
	full, err := NewTemplate(TemplateConfig{SrcMAC: attrs.HardwareAddr, DstMAC: dst, Src: local, Dst: remote, PayloadLen: s.BufLen})
	if err != nil {
		return nil, err
	}
	plan := &txPlan{next: 1, full: full, payload: s.BufLen, stats: f.Stats}
	if s.Bytes > 0 {
		if r := int(s.Bytes % int64(s.BufLen)); r != 0 {
			if r < HeaderLen {
				return nil, fmt.Errorf("afxdp: the last datagram of %d bytes cannot carry the %d-byte sequence header: send a multiple of the buffer length", r, HeaderLen)
			}
			if plan.last, err = NewTemplate(TemplateConfig{SrcMAC: attrs.HardwareAddr, DstMAC: dst, Src: local, Dst: remote, PayloadLen: r}); err != nil {
				return nil, err
			}
			plan.lastLen = r
		}
	}
	nq := max(b.Queues, 1)
	if nq > attrs.NumTxQueues && attrs.NumTxQueues > 0 {
		return nil, fmt.Errorf("afxdp: %d TX queues asked, %s has %d", nq, attrs.Name, attrs.NumTxQueues)
	}
	owners, err := openAll(ctx, SocketConfig{Ifindex: attrs.Index, Iface: attrs.Name, TX: true, ZeroCopy: b.ZeroCopy}, nq)
	if err != nil {
		return nil, err
	}
	socks := owners
	defer func() {
		if err != nil {
			closeAll(socks)
		}
	}()
	nt := b.threads(nq, s.Rate, owners[0].ZC)
	for i := nq; i < nt; i++ {
		sk, err := OpenShared(ctx, owners[i%nq])
		if err != nil {
			return nil, err
		}
		socks = append(socks, sk)
	}
	noteSockets(&f.Facts, owners, attrs.Name, "transmit")
	switch {
	case nt > nq:
		f.Facts.Notef("afxdp: %d sending threads (the flow's and %d of its own), each with a socket; those beyond one per queue share its UMEM", nt, nt-1)
	case nt > 1:
		f.Facts.Notef("afxdp: %d sending threads (the flow's and %d of its own), one per queue", nt, nt-1)
	}
	f.Facts.Notef("afxdp: %s -> %s (%s), UDP checksum computed per datagram", attrs.HardwareAddr, dst, hop)
	pools := make([]*txPool, nq)
	for i, o := range owners {
		pools[i] = newTxPool(o, plan.full)
	}
	senders := make([]*sender, len(socks))
	for i, sk := range socks {
		senders[i] = newSender(sk, pools[i%nq], plan, b.batch(), s.Rate)
	}
	return &txSetup{socks: socks, pools: pools, plan: plan, senders: senders}, nil
}

// boundDevice is the interface socket fd is bound to (SO_BINDTODEVICE,
// ttcp's -I), or "".
func boundDevice(fd int) string {
	name, _ := unix.GetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE)
	return name
}

func openAll(ctx context.Context, c SocketConfig, nq int) ([]*Socket, error) {
	var socks []*Socket
	for q := range nq {
		c.Queue = q
		s, err := Open(ctx, c)
		if err != nil {
			closeAll(socks)
			return nil, err
		}
		socks = append(socks, s)
	}
	return socks, nil
}

// openRX binds a socket to every RX queue in use. IFLA_NUM_RX_QUEUES is
// how many the device allocated (a veth made without numrxqueues has one
// per CPU); fewer may be in use, and bind refuses those beyond with
// EINVAL.
func openRX(ctx context.Context, c SocketConfig, nq int) ([]*Socket, error) {
	var socks []*Socket
	for q := range nq {
		c.Queue = q
		s, err := Open(ctx, c)
		if err != nil {
			if q > 0 && errors.Is(err, unix.EINVAL) {
				break
			}
			closeAll(socks)
			return nil, err
		}
		socks = append(socks, s)
	}
	return socks, nil
}

// closeAll closes socks in reverse order: sockets sharing a UMEM before
// its owner.
func closeAll(socks []*Socket) error {
	var errs []error
	for i := len(socks) - 1; i >= 0; i-- {
		errs = append(errs, socks[i].Close())
	}
	return errors.Join(errs...)
}

// maxThreadsPerQueue bounds the senders sharing one queue's frames.
const maxThreadsPerQueue = 4

// threads is how many senders transmit on nq queues: Threads when set
// (at least one per queue); else one per queue when paced or in
// zero-copy mode (where the driver, not the kick, does the work); else one
// per CPU, as trafgen does, at most maxThreadsPerQueue per queue: in copy
// mode a kick runs the whole transmit path, and the receive path of a
// veth peer, on the calling CPU.
func (b Backend) threads(nq int, rate float64, zc bool) int {
	switch {
	case b.Threads > 0:
		return max(b.Threads, nq)
	case rate > 0 || zc:
		return nq
	}
	return max(nq, min(runtime.GOMAXPROCS(0), maxThreadsPerQueue*nq))
}

func noteSockets(facts *engine.Facts, socks []*Socket, iface, dir string) {
	mode := "copy mode"
	if socks[0].ZC {
		mode = "zero-copy mode"
	}
	facts.Notef("afxdp: %s on %s, %d queue(s), one socket each, %s", dir, iface, len(socks), mode)
	for _, n := range socks[0].Notes {
		facts.Notef("afxdp: %s", n)
	}
}

// addStats adds every socket's XDP_STATISTICS to the facts.
func addStats(facts *engine.Facts, socks []*Socket) {
	var t unix.XDPStatistics
	for _, s := range socks {
		st, err := s.Stats()
		if err != nil {
			continue
		}
		t.Rx_dropped += st.Rx_dropped
		t.Rx_invalid_descs += st.Rx_invalid_descs
		t.Tx_invalid_descs += st.Tx_invalid_descs
		t.Rx_ring_full += st.Rx_ring_full
		t.Rx_fill_ring_empty_descs += st.Rx_fill_ring_empty_descs
		t.Tx_ring_empty_descs += st.Tx_ring_empty_descs
	}
	facts.Add("xdp_rx_dropped", int64(t.Rx_dropped))
	facts.Add("xdp_rx_invalid_descs", int64(t.Rx_invalid_descs))
	facts.Add("xdp_tx_invalid_descs", int64(t.Tx_invalid_descs))
	facts.Add("xdp_rx_ring_full", int64(t.Rx_ring_full))
	facts.Add("xdp_rx_fill_ring_empty", int64(t.Rx_fill_ring_empty_descs))
	facts.Add("xdp_tx_ring_empty", int64(t.Tx_ring_empty_descs))
}

// rxSetup is a receive made ready: the program loaded and attached, an
// AF_XDP socket bound to every RX queue in use and put into its map.
type rxSetup struct {
	port  uint16
	prog  *bpf.Redirect
	socks []*Socket
}

// close closes the sockets, then detaches and frees the program.
func (x *rxSetup) close() error {
	var perr error
	if x.prog != nil {
		perr = x.prog.Close()
	}
	return errors.Join(closeAll(x.socks), perr)
}

// prepared holds the receives Prepare set up until Recv takes them.
var prepared sync.Map // *engine.Flow -> *rxSetup

// Prepare implements engine.Preparer: it attaches the XDP program and
// binds the AF_XDP sockets before the transmitter can start, so no
// datagram goes past them. The program passes the flow's sentinels
// (Spec.SentinelMax) and its first datagram to the flow's socket, where
// ttcp waits for the transmitter; everything else waits in the RX rings
// for Recv.
func (b Backend) Prepare(ctx context.Context, f *engine.Flow) (func() error, error) {
	x, err := b.setupRX(ctx, f, true)
	if err != nil {
		return nil, err
	}
	prepared.Store(f, x)
	return func() error {
		if v, ok := prepared.LoadAndDelete(f); ok {
			return v.(*rxSetup).close()
		}
		return nil
	}, nil
}

// setupRX loads the program, binds the sockets and attaches the program,
// in the network namespace of the flow's socket.
func (b Backend) setupRX(ctx context.Context, f *engine.Flow, passFirst bool) (x *rxSetup, err error) {
	local, _, err := udpAddrs(f)
	if err != nil {
		return nil, err
	}
	err = inSockNetns(f.Sock.FD(), func() (err error) {
		x, err = b.setupRXHere(ctx, f, local, passFirst)
		return err
	})
	return x, err
}

// setupRXHere is setupRX on the calling thread.
func (b Backend) setupRXHere(ctx context.Context, f *engine.Flow, local netip.AddrPort, passFirst bool) (_ *rxSetup, err error) {
	link, err := rxIface(b.Iface, f.Sock.FD(), local.Addr())
	if err != nil {
		return nil, err
	}
	attrs := link.Attrs()
	nq := max(attrs.NumRxQueues, 1)
	x := &rxSetup{port: local.Port()}
	x.prog, err = bpf.LoadConfig(bpf.Config{Port: local.Port(), Queues: nq, PassMax: f.Spec.SentinelMax, PassFirst: passFirst})
	if err != nil {
		return nil, bpfErr(err)
	}
	defer func() {
		if err != nil {
			x.close()
		}
	}()
	x.socks, err = openRX(ctx, SocketConfig{Ifindex: attrs.Index, Iface: attrs.Name, RX: true, ZeroCopy: b.ZeroCopy, RingSize: rxRing(nq)}, nq)
	if err != nil {
		return nil, err
	}
	for q, s := range x.socks {
		if err := x.prog.Register(q, s.FD()); err != nil {
			return nil, bpfErr(err)
		}
	}
	mode, err := x.prog.Attach(attrs.Index, !b.NativeOnly)
	if err != nil {
		return nil, bpfErr(err)
	}
	noteSockets(&f.Facts, x.socks, attrs.Name, "receive")
	f.Facts.Notef("afxdp: XDP program attached in %s mode, UDP port %d only", mode, local.Port())
	if passFirst {
		f.Facts.Notef("afxdp: attached before the transmitter started; sentinels and the first datagram went to the socket")
	}
	return x, nil
}

// Recv implements engine.Backend. f.Sock is the UDP socket bound to the
// test's port: the XDP program steers that port's datagrams into AF_XDP
// sockets, one per RX queue of the interface, while Recv runs; datagrams
// that reached the socket before the program was attached (or that it
// passes: sentinels, and the first datagram after Prepare) are read from
// it and counted too. The flow's thread serves queue 0 and the socket;
// threads of its own serve the other queues. Recv ends at an end sentinel
// (Spec.SentinelMax), after draining what the rings still hold; when the
// flow is cancelled; or, when the socket has a timeout
// (Socket.SetTimeout), once nothing arrived for that long (an error
// wrapping engine.ErrTimeout). Like Send, it sets up in the socket's
// network namespace.
func (b Backend) Recv(ctx context.Context, f *engine.Flow) error {
	var x *rxSetup
	if v, ok := prepared.LoadAndDelete(f); ok {
		x = v.(*rxSetup)
	} else {
		var err error
		if x, err = b.setupRX(ctx, f, false); err != nil {
			return err
		}
	}
	defer x.close()
	return x.run(f, b.batch())
}

// run receives on every queue and the flow's socket, then reports.
func (x *rxSetup) run(f *engine.Flow, batch int) error {
	nq := len(x.socks)
	sh := &rxShared{syscalls: f.Facts.Counter(engine.FactSyscalls), locked: f.Spec.Sink != nil || f.Spec.Framing != nil}
	sh.last.Store(time.Now().UnixNano())
	sr := &sockReader{f: f, sh: sh, buf: make([]byte, 65536), timeout: rcvTimeout(f.Sock.FD())}
	rxs := make([]*receiver, nq)
	for i, s := range x.socks {
		rxs[i] = &receiver{s: s, f: f, sh: sh, port: x.port, batch: batch, wait: rxWait}
	}
	if sr.timeout > 0 {
		rxs[0].wait = min(rxWait, max(sr.timeout/10, time.Millisecond))
	}
	ep, err := pollSet(rxs[0].s.fd, f.Sock.FD())
	if err != nil {
		return err
	}
	defer unix.Close(ep)
	if nq > 1 {
		f.Facts.Set(engine.FactOwnThreads, int64(nq-1))
	}
	errs := make([]error, nq)
	var wg sync.WaitGroup
	for i := 1; i < nq; i++ {
		wg.Go(func() {
			// Never unlocked: the thread, and its priority, end with
			// the goroutine.
			runtime.LockOSThread()
			raisePriority()
			errs[i] = rxs[i].run(rxs[i].s.fd, nil)
		})
	}
	raisePriority()
	errs[0] = rxs[0].run(ep, sr.read)
	wg.Wait()

	parts := []Seq{sr.seq}
	var other int64
	for _, r := range rxs {
		parts = append(parts, r.seq)
		other += r.other
	}
	seq := Merge(parts...)
	f.Facts.Set("lost_datagrams", seq.Lost())
	f.Facts.Set("reordered_datagrams", seq.Reordered)
	f.Facts.Set("socket_datagrams", sr.seq.Received)
	if other > 0 {
		f.Facts.Set("other_frames", other)
	}
	addStats(&f.Facts, x.socks)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if f.Cancelled() {
		return engine.ErrCancelled
	}
	return nil
}

// rxRing is the RX ring size of each of nq receive sockets: 8192 (a
// 16384-frame fill ring, 32 MiB of UMEM) for one or two queues, less for
// more, at least 2048. A ring absorbs the time its thread is not
// scheduled: at 1 Mpps the default 2048 lasted 2 ms, and a loaded 2-CPU
// machine (trafgen on both) overflowed it.
func rxRing(nq int) int { return max(2048, min(8192, 16384/max(nq, 1))) }
