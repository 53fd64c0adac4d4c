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
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/bpf"
	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(Backend{}) }

// Backend moves UDP datagrams through AF_XDP sockets. The zero value is
// what `--backend afxdp` runs: one TX queue, every RX queue, copy mode,
// batches of 64, the interface and MAC addresses from the route and
// neighbour tables.
//
// Options (engine.Options): batch=N descriptors per ring batch, zc to ask
// for zero-copy, queues=N and dstmac=MAC as the fields below. The
// interface is also the flow socket's SO_BINDTODEVICE (ttcp's -I).
type Backend struct {
	// Iface overrides the interface; empty: the flow socket's
	// SO_BINDTODEVICE, else the route's (sender) or the one holding the
	// bind address (receiver).
	Iface string
	// DstMAC overrides the destination MAC address (--dst-mac, dstmac=).
	DstMAC net.HardwareAddr
	// Queues is the number of TX queues a sender uses, one socket and
	// thread each (0: 1; queues=N). A receiver always binds every RX
	// queue in use.
	Queues int
	// Threads is the number of sending threads, spread over the queues,
	// each with a socket of its own (threads=N; 0: one per CPU when
	// unpaced, else one per queue; see threads).
	Threads int
	// NativeOnly refuses the generic-mode (skb) attach that is otherwise
	// the fallback where the driver has no native XDP.
	NativeOnly bool

	opts engine.Options
}

var (
	_ engine.Backend      = Backend{}
	_ engine.Configurable = Backend{}
	_ engine.Preparer     = Backend{}
)

const defaultBatch = 256

// Name implements engine.Backend.
func (Backend) Name() string { return "afxdp" }

// Configure implements engine.Configurable: batch, zc, queues, threads,
// dstmac.
func (b Backend) Configure(o engine.Options) (engine.Backend, error) {
	if err := engine.Refuse(b.Name(), o, engine.Options{Batch: o.Batch, ZeroCopy: o.ZeroCopy, Queues: o.Queues, Threads: o.Threads, DstMAC: o.DstMAC}); err != nil {
		return nil, err
	}
	if o.Batch > 1024 {
		return nil, fmt.Errorf("afxdp: batch %d: at most 1024", o.Batch)
	}
	if o.Queues > 64 {
		return nil, fmt.Errorf("afxdp: queues %d: at most 64", o.Queues)
	}
	if o.Queues > 0 {
		b.Queues = o.Queues
	}
	if o.Threads > 256 {
		return nil, fmt.Errorf("afxdp: threads %d: at most 256", o.Threads)
	}
	if o.Threads > 0 {
		b.Threads = o.Threads
	}
	if o.DstMAC != "" {
		mac, err := net.ParseMAC(o.DstMAC)
		if err != nil || len(mac) != 6 {
			return nil, fmt.Errorf("afxdp: dstmac %q: not an Ethernet address", o.DstMAC)
		}
		b.DstMAC = mac
	}
	b.opts = o
	return b, nil
}

func (b Backend) batch() int {
	if b.opts.Batch > 0 {
		return b.opts.Batch
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

func udpAddrs(f *engine.Flow) (local, remote netip.AddrPort, err error) {
	if f.Spec.Protocol != engine.UDP {
		return local, remote, fmt.Errorf("afxdp moves UDP datagrams only (TCP: use readwrite, sendfile, splice, zerocopy or iouring): %w", engine.ErrNotSupported)
	}
	if a, ok := f.Conn.LocalAddr().(*net.UDPAddr); ok {
		local = a.AddrPort()
	}
	if ra := f.Conn.RemoteAddr(); ra != nil {
		if a, ok := ra.(*net.UDPAddr); ok {
			remote = a.AddrPort()
		}
	}
	return netip.AddrPortFrom(local.Addr().Unmap(), local.Port()), netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port()), nil
}

// Send implements engine.Backend. f.Conn is a connected UDP socket: its
// addresses and ports are those of the frames; it carries nothing itself.
// Send may run on any thread: it sets up in the socket's network
// namespace (inConnNetns).
func (b Backend) Send(ctx context.Context, f *engine.Flow) error {
	local, remote, err := udpAddrs(f)
	if err != nil {
		return err
	}
	s := f.Spec
	if s.Source != nil {
		return fmt.Errorf("afxdp sends generated datagrams only, not a data stream (use -s, or --backend mmsg): %w", engine.ErrNotSupported)
	}
	if !remote.IsValid() {
		return errors.New("afxdp: the flow's socket is not connected")
	}
	var tx *txSetup
	if err := inConnNetns(f.Conn, func() (err error) {
		tx, err = b.setupTX(f, local, remote)
		return err
	}); err != nil {
		return err
	}
	defer closeAll(tx.socks)
	senders, pools, facts := tx.senders, tx.pools, engine.FactsOf(f)
	errs := make([]error, len(senders))
	var wg sync.WaitGroup
	for i, x := range senders {
		wg.Go(func() { errs[i] = x.run(ctx.Done()) })
	}
	wg.Wait()
	var kicks, pending int64
	for _, x := range senders {
		kicks += x.kicks
	}
	for _, p := range pools {
		pending += int64(p.pending())
	}
	facts.Add(engine.FactSyscalls, kicks)
	facts.Add("tx_kicks", kicks)
	facts.Add(engine.FactOwnThreads, int64(len(senders)))
	if pending > 0 {
		facts.Add(engine.FactPending, pending)
	}
	addStats(facts, tx.socks)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// txSetup is a transmit made ready: the AF_XDP sockets bound, their frame
// pools and the senders that will run them.
type txSetup struct {
	socks   []*Socket
	pools   []*txPool
	senders []*sender
}

// setupTX finds the interface and the next hop's MAC address, builds the
// frame templates and binds the sockets. It runs in the flow socket's
// network namespace (inConnNetns).
func (b Backend) setupTX(f *engine.Flow, local, remote netip.AddrPort) (_ *txSetup, err error) {
	s := f.Spec
	link, hop, err := route(remote.Addr())
	if err != nil {
		return nil, err
	}
	iface := b.Iface
	if iface == "" {
		iface = boundDevice(f.Conn)
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
		if dst, err = neighbour(link, hop); err != nil {
			return nil, err
		}
	}
	full, err := NewTemplate(TemplateConfig{SrcMAC: attrs.HardwareAddr, DstMAC: dst, Src: local, Dst: remote, PayloadLen: s.BufLen})
	if err != nil {
		return nil, err
	}
	plan := &txPlan{full: full, payload: s.BufLen, stats: f.Stats}
	if s.Bytes > 0 {
		plan.total = uint64((s.Bytes + int64(s.BufLen) - 1) / int64(s.BufLen))
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
	if s.Duration > 0 {
		plan.deadline = time.Now().Add(s.Duration)
	}
	nq := max(b.Queues, 1)
	if nq > attrs.NumTxQueues && attrs.NumTxQueues > 0 {
		return nil, fmt.Errorf("afxdp: %d TX queues asked, %s has %d", nq, attrs.Name, attrs.NumTxQueues)
	}
	facts := engine.FactsOf(f)
	owners, err := openAll(SocketConfig{Ifindex: attrs.Index, Iface: attrs.Name, TX: true, ZeroCopy: b.opts.ZeroCopy}, nq)
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
		sk, err := OpenShared(owners[i%nq])
		if err != nil {
			return nil, err
		}
		socks = append(socks, sk)
	}
	noteSockets(facts, owners, attrs.Name, "transmit")
	if nt > nq {
		facts.Notef("afxdp: %d sending threads, each with a socket of its own sharing its queue's UMEM", nt)
	}
	facts.Notef("afxdp: %s -> %s (%s), UDP checksum computed per datagram", attrs.HardwareAddr, dst, hop)
	pools := make([]*txPool, nq)
	for i, o := range owners {
		pools[i] = newTxPool(o, plan.full)
	}
	senders := make([]*sender, len(socks))
	for i, sk := range socks {
		senders[i] = newSender(sk, pools[i%nq], plan, b.batch(), s.Rate/float64(len(socks)))
	}
	return &txSetup{socks: socks, pools: pools, senders: senders}, nil
}

// boundDevice is the interface c's socket is bound to (SO_BINDTODEVICE,
// ttcp's -I), or "".
func boundDevice(c net.Conn) string {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return ""
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	rc.Control(func(fd uintptr) { name, _ = unix.GetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE) })
	return name
}

func openAll(c SocketConfig, nq int) ([]*Socket, error) {
	var socks []*Socket
	for q := range nq {
		c.Queue = q
		s, err := Open(c)
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
func openRX(c SocketConfig, nq int) ([]*Socket, error) {
	var socks []*Socket
	for q := range nq {
		c.Queue = q
		s, err := Open(c)
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
	facts.Notef("afxdp: %s on %s, %d queue(s), one socket and thread each, %s", dir, iface, len(socks), mode)
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
	attrs *netlink.LinkAttrs
	port  uint16
	prog  *bpf.Redirect
	socks []*Socket
}

// close closes the sockets, then detaches and frees the program.
func (x *rxSetup) close() error {
	return errors.Join(closeAll(x.socks), x.prog.Close())
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
	x, err := b.setupRX(f, true)
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
func (b Backend) setupRX(f *engine.Flow, passFirst bool) (x *rxSetup, err error) {
	err = inConnNetns(f.Conn, func() (err error) {
		x, err = b.setupRXHere(f, passFirst)
		return err
	})
	return x, err
}

// setupRXHere is setupRX on the calling thread.
func (b Backend) setupRXHere(f *engine.Flow, passFirst bool) (_ *rxSetup, err error) {
	local, _, err := udpAddrs(f)
	if err != nil {
		return nil, err
	}
	sc, ok := f.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("afxdp: the flow's socket has no file descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var link netlink.Link
	var lerr error
	rc.Control(func(fd uintptr) { link, lerr = rxIface(b.Iface, int(fd), local.Addr()) })
	if lerr != nil {
		return nil, lerr
	}
	attrs := link.Attrs()
	nq := max(attrs.NumRxQueues, 1)
	x := &rxSetup{attrs: attrs, port: local.Port()}
	x.prog, err = bpf.LoadConfig(bpf.Config{Port: local.Port(), Queues: nq, PassMax: f.Spec.SentinelMax, PassFirst: passFirst})
	if err != nil {
		return nil, fmt.Errorf("afxdp: %w", err)
	}
	defer func() {
		if err != nil {
			x.close()
		}
	}()
	x.socks, err = openRX(SocketConfig{Ifindex: attrs.Index, Iface: attrs.Name, RX: true, ZeroCopy: b.opts.ZeroCopy, RingSize: rxRing(nq)}, nq)
	if err != nil {
		return nil, err
	}
	for q, s := range x.socks {
		if err := x.prog.Register(q, s.FD()); err != nil {
			return nil, err
		}
	}
	mode, err := x.prog.Attach(attrs.Index, !b.NativeOnly)
	if err != nil {
		return nil, fmt.Errorf("afxdp: %w", err)
	}
	facts := engine.FactsOf(f)
	noteSockets(facts, x.socks, attrs.Name, "receive")
	facts.Notef("afxdp: XDP program attached in %s mode, UDP port %d only", mode, local.Port())
	if passFirst {
		facts.Notef("afxdp: attached before the transmitter started; sentinels and the first datagram went to the socket")
	}
	return x, nil
}

// Recv implements engine.Backend. f.Conn is the UDP socket bound to the
// test's port: the XDP program steers that port's datagrams into AF_XDP
// sockets, one per RX queue of the interface, while Recv runs; datagrams
// that reached the socket before the program was attached (or that it
// passes: sentinels, and the first datagram after Prepare) are read from
// it and counted too. Recv ends at an end sentinel (Spec.SentinelMax),
// after draining what the rings still hold, or when ctx is done. Like
// Prepare, it may run on any thread: it sets up in the socket's network
// namespace (inConnNetns).
func (b Backend) Recv(ctx context.Context, f *engine.Flow) error {
	var x *rxSetup
	if v, ok := prepared.LoadAndDelete(f); ok {
		x = v.(*rxSetup)
	} else {
		var err error
		if x, err = b.setupRX(f, false); err != nil {
			return err
		}
	}
	defer x.close()
	socks := x.socks
	nq := len(socks)
	facts := engine.FactsOf(f)

	done := make(chan struct{})
	var once sync.Once
	end := func() { once.Do(func() { close(done) }) }
	stop := context.AfterFunc(ctx, end)
	defer stop()
	var sinkM sync.Mutex
	rxs := make([]*receiver, nq)
	errs := make([]error, nq+1)
	var wg sync.WaitGroup
	for i, s := range socks {
		rxs[i] = &receiver{s: s, f: f, port: x.port, batch: b.batch(), sinkM: &sinkM, sentinel: end}
		wg.Go(func() { errs[i] = rxs[i].run(done, ctx.Done()) })
	}
	// The socket itself: what came before the attach, and what the
	// program passes.
	var sockSeq Seq
	wg.Go(func() { errs[nq] = drainSocket(f, done, end, &sinkM, &sockSeq) })
	wg.Wait()
	f.Conn.SetReadDeadline(time.Time{})

	parts := []Seq{sockSeq}
	var other int64
	for _, r := range rxs {
		parts = append(parts, r.seq)
		other += r.other
	}
	seq := Merge(parts...)
	facts.Add(engine.FactOwnThreads, int64(len(rxs)))
	facts.Add("lost_datagrams", seq.Lost())
	facts.Add("reordered_datagrams", seq.Reordered)
	facts.Add("socket_datagrams", sockSeq.Received)
	if other > 0 {
		facts.Add("other_frames", other)
	}
	addStats(facts, socks)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// drainSocket reads the flow's socket until done, counting what it gets.
func drainSocket(f *engine.Flow, done <-chan struct{}, end func(), sinkM *sync.Mutex, seq *Seq) error {
	buf := make([]byte, 65536)
	stop := context.AfterFunc(contextOf(done), func() { f.Conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		n, err := f.Conn.Read(buf)
		if err != nil {
			select {
			case <-done:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("afxdp: read the socket: %w", err)
		}
		if n <= f.Spec.SentinelMax {
			end()
			return nil
		}
		var s uint32
		if n >= HeaderLen {
			s = uint32(buf[8])<<24 | uint32(buf[9])<<16 | uint32(buf[10])<<8 | uint32(buf[11])
		}
		seq.Add(s)
		sinkM.Lock()
		err = engine.Deliver(f, buf[:n], true)
		sinkM.Unlock()
		if err != nil {
			return err
		}
	}
}

// contextOf is a context done when done is closed.
func contextOf(done <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-done; cancel() }()
	return ctx
}

// rxRing is the RX ring size of each of nq receive sockets: 8192 (a
// 16384-frame fill ring, 32 MiB of UMEM) for one or two queues, less for
// more, at least 2048. A ring absorbs the time its thread is not
// scheduled: at 1 Mpps the default 2048 lasted 2 ms, and a loaded 2-CPU
// machine (trafgen on both) overflowed it.
func rxRing(nq int) int { return max(2048, min(8192, 16384/max(nq, 1))) }
