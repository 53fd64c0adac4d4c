package netlab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

const (
	// lineSlots is how many frames one direction of the delay line
	// holds: 16384 in flight carry 2 Gbit/s of 1514-byte frames across a
	// 100 ms round trip. Its buffer is anonymous memory, and slots are
	// reused most recent first, so the line takes only the memory its
	// frames in flight need.
	lineSlots = 16384
	// slotSize holds a virtio_net_hdr and a frame of a 1500-byte MTU with
	// room to spare; a longer frame is counted malformed and dropped.
	slotSize   = 2048
	lineBatch  = 64      // frames per recvmmsg and per sendmmsg
	lineSock   = 8 << 20 // socket buffers, bytes: 60 ms of frames at 1 Gbit/s
	vnetHdrLen = 10      // struct virtio_net_hdr
	// vnetNeedsCsum is VIRTIO_NET_HDR_F_NEEDS_CSUM: the frame carries a
	// partial checksum for the receiver's stack to trust (the flag is all
	// a sent header may say; DATA_VALID only means something read).
	vnetNeedsCsum = 1
)

// delayed builds the links of a Delayed lab and starts its delay line:
// A - ra | line | rb - B, with A and B on subnet 0 as in a Direct lab.
func (l *Lab) delayed(aName, raName, rbName, bName string) error {
	r := l.Router
	// R's kernel stays off the segment: no address, no forwarding (a new
	// namespace's default), and no IPv6, so it sends no router
	// solicitations or MLD reports of its own to A or B.
	if err := r.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1\n"), 0o644)
	}); err != nil {
		return fmt.Errorf("netlab: turn IPv6 off in %s: %w", r.Name, err)
	}
	for _, e := range []struct {
		h          *Host
		name, peer string
		host       byte
	}{{l.A, aName, raName, 1}, {l.B, bName, rbName, 2}} {
		if err := l.veth(r, e.peer, e.h, e.name); err != nil {
			return err
		}
		a4, a6 := addr4(0, e.host), addr6(0, e.host)
		if err := e.h.configure(e.name, a4, a6, 0); err != nil {
			return err
		}
		if err := e.h.Do(func() error { return segmentationOff(e.name) }); err != nil {
			return fmt.Errorf("netlab: segmentation offloads off on %s in %s: %w", e.name, e.h.Name, err)
		}
		if err := r.linkUp(e.peer); err != nil {
			return err
		}
		e.h.Iface, e.h.Addr4, e.h.Addr6 = e.name, a4, a6
	}
	r.Iface = raName
	line, err := startLine(r, raName, rbName, l.Options)
	if err != nil {
		return err
	}
	l.stop = func() error {
		err := line.close()
		l.line = line.counts
		return err
	}
	return nil
}

// veth creates a veth pair, xName in x and yName in y, both down and
// without addresses.
func (l *Lab) veth(x *Host, xName string, y *Host, yName string) error {
	hdl, err := netlink.NewHandleAt(x.ns)
	if err != nil {
		return fmt.Errorf("netlab: netlink in %s: %w", x.Name, err)
	}
	defer hdl.Close()
	q := max(l.Options.Queues, 1)
	veth := &netlink.Veth{
		LinkAttrs:       netlink.LinkAttrs{Name: xName, NumTxQueues: q, NumRxQueues: q},
		PeerName:        yName,
		PeerNamespace:   netlink.NsFd(int(y.ns)),
		PeerNumTxQueues: uint32(q),
		PeerNumRxQueues: uint32(q),
	}
	if err := hdl.LinkAdd(veth); err != nil {
		return fmt.Errorf("netlab: add veth %s-%s: %w", xName, yName, err)
	}
	return nil
}

// segmentationOff turns off every segmentation offload of iface (TSO,
// GSO, UDP GSO, ...) in the calling thread's namespace, so that the stack
// hands it one frame per packet, as a real NIC puts them on the wire: the
// delay line then delays, queues and drops packets, not 64 KiB trains.
// Checksum offload stays on; the line carries partial checksums across.
func segmentationOff(iface string) error {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return err
	}
	defer e.Close()
	names, err := e.FeatureNames(iface)
	if err != nil {
		return err
	}
	off := map[string]bool{}
	for n := range names {
		if n == "tx-gso-list" || strings.HasPrefix(n, "tx-") && strings.HasSuffix(n, "-segmentation") {
			off[n] = false
		}
	}
	if err := e.Change(iface, off); err != nil {
		return err
	}
	on, err := e.Features(iface)
	if err != nil {
		return err
	}
	for _, n := range []string{"tx-generic-segmentation", "tx-tcp-segmentation", "tx-tcp6-segmentation", "tx-udp-segmentation"} {
		if on[n] {
			return fmt.Errorf("%s is still on", n)
		}
	}
	return nil
}

// delayLine relays frames between two veths of one namespace, one
// direction each way, each on an OS thread locked to it while it runs,
// that waits in ppoll for frames, for the next frame's due time, or for
// the stop.
type delayLine struct {
	stopfd int    // eventfd: written once to stop both directions
	socks  [2]int // AF_PACKET sockets on the A and B sides
	dirs   [2]*direction
	wg     sync.WaitGroup
	counts [2]LineCounts // each direction's, once close has stopped them
}

// startLine opens the line's sockets in r, on the veths ra (facing A) and
// rb (facing B), and starts relaying.
func startLine(r *Host, ra, rb string, o Options) (_ *delayLine, err error) {
	dl := &delayLine{stopfd: -1, socks: [2]int{-1, -1}}
	defer func() {
		if err != nil {
			dl.release()
		}
	}()
	hdl, err := netlink.NewHandleAt(r.ns)
	if err != nil {
		return nil, fmt.Errorf("netlab: netlink in %s: %w", r.Name, err)
	}
	defer hdl.Close()
	var idx [2]int
	for i, name := range []string{ra, rb} {
		link, err := hdl.LinkByName(name)
		if err != nil {
			return nil, fmt.Errorf("netlab: find %s in %s: %w", name, r.Name, err)
		}
		idx[i] = link.Attrs().Index
	}
	// The sockets belong to the namespace they are made in, whatever
	// thread uses them later.
	if err := r.Do(func() error {
		for i, name := range []string{ra, rb} {
			fd, err := packetSocket(idx[i])
			if err != nil {
				return fmt.Errorf("netlab: delay line socket on %s: %w", name, err)
			}
			dl.socks[i] = fd
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if dl.stopfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("netlab: delay line: %w", os.NewSyscallError("eventfd", err))
	}
	for i, name := range []string{"A to B", "B to A"} {
		d, err := newDirection(name, dl.socks[i], dl.socks[1-i], newShaper(o, uint64(i)))
		if err != nil {
			return nil, err
		}
		dl.dirs[i] = d
	}
	for _, d := range dl.dirs {
		dl.wg.Add(1)
		go func() {
			defer dl.wg.Done()
			d.err = d.run(dl.stopfd)
		}()
	}
	return dl, nil
}

// close stops both directions, waits for their threads, releases the
// sockets and buffers, and returns what stopped a direction early.
func (dl *delayLine) close() error {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	if _, err := unix.Write(dl.stopfd, one[:]); err != nil {
		return fmt.Errorf("netlab: stop the delay line: %w", os.NewSyscallError("write", err)) // nothing released: the threads may still run
	}
	dl.wg.Wait()
	for i, d := range dl.dirs {
		dl.counts[i] = d.c
		// What in's socket dropped because the line had not read it
		// (its buffer full): the kernel counts them, and zeroes the
		// count at the read.
		if st, err := unix.GetsockoptTpacketStats(d.in, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			dl.counts[i].RingFull = int64(st.Drops)
		}
	}
	var errs []error
	for _, d := range dl.dirs {
		if d.err != nil {
			errs = append(errs, fmt.Errorf("netlab: delay line %s stopped early (%v): %w", d.name, d.c, d.err))
		}
	}
	return errors.Join(append(errs, dl.release())...)
}

// release closes what startLine opened; the threads must be gone.
func (dl *delayLine) release() error {
	var errs []error
	for _, d := range dl.dirs {
		if d != nil {
			errs = append(errs, d.unmap())
		}
	}
	for _, fd := range append(dl.socks[:], dl.stopfd) {
		if fd >= 0 {
			errs = append(errs, os.NewSyscallError("close", unix.Close(fd)))
		}
	}
	dl.socks, dl.stopfd = [2]int{-1, -1}, -1
	return errors.Join(errs...)
}

// packetSocket opens an AF_PACKET socket in the calling thread's namespace
// that reads every frame arriving on interface ifindex (none it sends)
// and sends frames out of it, each after a virtio_net_hdr that carries
// the frame's checksum offload state.
func packetSocket(ifindex int) (_ int, err error) {
	// Protocol 0 receives nothing until bind names the interface.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			err = fmt.Errorf("%w: needs CAP_NET_RAW; run as root", err)
		}
		return -1, os.NewSyscallError("socket", err)
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
		}
	}()
	for _, o := range []struct {
		level, opt, val int
		name            string
	}{
		{unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING"},
		{unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1, "PACKET_VNET_HDR"},
		{unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS"}, // when each frame arrived
		{unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, lineSock, "SO_RCVBUFFORCE"},
		{unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, lineSock, "SO_SNDBUFFORCE"},
	} {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.val); err != nil {
			return -1, fmt.Errorf("setsockopt %s: %w", o.name, err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		return -1, os.NewSyscallError("bind", err)
	}
	return fd, nil
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// direction is one way of the delay line: frames read from in wait in a
// FIFO until due, then go out of out.
type direction struct {
	name    string
	in, out int
	shape   *shaper
	epoch   time.Time // zero of the line's clock (monotonic)

	buf  []byte  // lineSlots slots of slotSize bytes, mmapped
	free []int32 // unused slots, a stack: the most recently freed first

	// The FIFO of frames in flight: slot, bytes (virtio_net_hdr
	// included) and due time of each.
	qSlot, qSize []int32
	qDue         []int64
	head, n      int

	iov     []unix.Iovec
	msgs    []unix.Mmsghdr // sendmmsg's
	rmsgs   []unix.Mmsghdr // recvmmsg's, each with ctrl's room for its arrival time
	ctrl    []byte
	last    int64 // the latest arrival time given to the shaper
	blocked bool  // out's buffer was full: wait until it can send

	c   LineCounts // the direction's thread's alone until it ends
	err error      // why run returned early
}

func newDirection(name string, in, out int, s *shaper) (*direction, error) {
	buf, err := unix.Mmap(-1, 0, lineSlots*slotSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("netlab: delay line buffer: %w", os.NewSyscallError("mmap", err))
	}
	d := &direction{
		name: name, in: in, out: out, shape: s, epoch: time.Now(), buf: buf,
		free:  make([]int32, lineSlots),
		qSlot: make([]int32, lineSlots), qSize: make([]int32, lineSlots), qDue: make([]int64, lineSlots),
		iov: make([]unix.Iovec, lineBatch), msgs: make([]unix.Mmsghdr, lineBatch),
		rmsgs: make([]unix.Mmsghdr, lineBatch), ctrl: make([]byte, lineBatch*ctrlRoom),
	}
	for i := range d.free {
		d.free[i] = int32(lineSlots - 1 - i) // slot 0 on top
	}
	for i := range d.msgs {
		d.msgs[i].Hdr.Iov = &d.iov[i]
		d.msgs[i].Hdr.SetIovlen(1)
		d.rmsgs[i].Hdr.Iov = &d.iov[i]
		d.rmsgs[i].Hdr.SetIovlen(1)
	}
	return d, nil
}

func (d *direction) unmap() error {
	if d.buf == nil {
		return nil
	}
	err := unix.Munmap(d.buf)
	d.buf = nil
	return os.NewSyscallError("munmap", err)
}

func (d *direction) now() int64 { return int64(time.Since(d.epoch)) }

func (d *direction) slot(s int32) *byte { return &d.buf[int(s)*slotSize] }

// run relays until stopfd is readable. It returns an error only for a
// failure that is the line's own (a bad descriptor); a frame the kernel
// refuses is dropped and counted, as a wire would lose it.
func (d *direction) run(stopfd int) error {
	// The thread goes back to the runtime afterwards, with its timer
	// slack as it was: it must not end with the line, because a thread's
	// exit kills the commands it started with Pdeathsig (Host.Command's),
	// and the runtime may have started some on this very thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err == nil {
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0)
	}
	// Wake up at a frame's due time, not up to 50 µs (the default slack)
	// after it.
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	// Real-time priority where the kernel grants it, so that frames are
	// read when they arrive and leave when due even while the host's
	// other threads keep every CPU busy: a loaded machine's scheduling
	// delays would otherwise become the path's jitter and bursts. The
	// thread sleeps in ppoll between frames, and the kernel's RT
	// throttling bounds it regardless.
	if old, err := unix.SchedGetAttr(0, 0); err == nil {
		if unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0) == nil {
			defer unix.SchedSetAttr(0, old, 0)
		}
	}
	fds := []unix.PollFd{{Fd: int32(d.in)}, {Fd: int32(stopfd), Events: unix.POLLIN}, {Fd: int32(d.out)}}
	for {
		if err := d.release(d.now()); err != nil {
			return err
		}
		fds[0].Events, fds[2].Events = 0, 0
		if len(d.free) > 0 {
			fds[0].Events = unix.POLLIN // when full, frames wait in (or overflow) in's buffer
		}
		var ts *unix.Timespec
		if d.blocked {
			fds[2].Events = unix.POLLOUT
		} else if d.n > 0 {
			t := unix.NsecToTimespec(max(d.qDue[d.head]-d.now(), 0))
			ts = &t
		}
		if _, err := unix.Ppoll(fds, ts, nil); err != nil {
			if err == unix.EINTR {
				continue
			}
			return os.NewSyscallError("ppoll", err)
		}
		if fds[1].Revents != 0 {
			return nil
		}
		if fds[2].Revents != 0 {
			d.blocked = false
			if fds[2].Revents&unix.POLLERR != 0 {
				// An error of out's (its veth went down): read it, or
				// ppoll reports it forever. The frames it stopped were
				// counted when they failed to send.
				unix.GetsockoptInt(d.out, unix.SOL_SOCKET, unix.SO_ERROR)
			}
		}
		if fds[0].Revents != 0 {
			if err := d.receive(); err != nil {
				return err
			}
		}
	}
}

// fatal tells the errors of a descriptor or buffer that is not what it
// should be (the line's bug) from those of a frame or a link.
func fatal(errno unix.Errno) bool {
	return errno == unix.EBADF || errno == unix.EFAULT || errno == unix.ENOTSOCK
}

// receive reads a batch of frames into free slots and queues those the
// shaper passes.
func (d *direction) receive() error {
	k := min(lineBatch, len(d.free))
	top := len(d.free) - 1
	for i := range k {
		d.iov[i].Base = d.slot(d.free[top-i])
		d.iov[i].SetLen(slotSize)
		d.rmsgs[i].Hdr.Flags = 0
		d.rmsgs[i].Hdr.Control = &d.ctrl[i*ctrlRoom]
		d.rmsgs[i].Hdr.SetControllen(ctrlRoom)
	}
	r, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(d.in), uintptr(unsafe.Pointer(&d.rmsgs[0])), uintptr(k), unix.MSG_DONTWAIT, 0, 0)
	switch {
	case errno == unix.EAGAIN || errno == unix.EINTR:
		return nil
	case fatal(errno):
		return os.NewSyscallError("recvmmsg", errno)
	case errno != 0:
		// A frame the kernel could not describe in a virtio_net_hdr
		// (EINVAL; it is gone), or the link's error (ENETDOWN).
		d.c.Bad++
		return nil
	}
	wall := time.Now()
	now, real := int64(wall.Sub(d.epoch)), wall.UnixNano()
	kept := 0 // received frames stay in slots free[top-i]; the dropped ones go back
	for i := range int(r) {
		s := d.free[top-i]
		size := int(d.rmsgs[i].Len)
		if d.rmsgs[i].Hdr.Flags&unix.MSG_TRUNC != 0 || size < vnetHdrLen+14 {
			d.c.Bad++
			continue
		}
		due, v := d.shape.admit(d.arrival(i, now, real), size-vnetHdrLen)
		switch v {
		case lost:
			d.c.Lost++
			continue
		case queueFull:
			d.c.QueueFull++
			continue
		}
		d.buf[int(s)*slotSize] &= vnetNeedsCsum // the header's flags
		q := (d.head + d.n) % lineSlots
		d.qSlot[q], d.qSize[q], d.qDue[q] = s, int32(size), due
		d.n++
		// Move s out of the received range of the stack: swap it with
		// the kept frames' boundary, so that the dropped slots remain.
		d.free[top-i], d.free[top-kept] = d.free[top-kept], s
		kept++
	}
	d.free = d.free[:len(d.free)-kept]
	return nil
}

// ctrlRoom is the control message room of a received frame: its
// SCM_TIMESTAMPNS.
var ctrlRoom = unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))

// arrival is when received frame i arrived, on the line's clock, from
// the time the kernel stamped on it: a line the host held up reads a
// backlog of frames at once, and the shaper must see them as they came,
// spread over the wait, not as one burst at the read (which would
// overflow its queue with frames a wire would have carried). now and real
// are the read's time on the line's clock and the wall clock's; the
// result stays between the latest arrival and now, so that the due times
// never go back, whatever the wall clock does.
func (d *direction) arrival(i int, now, real int64) int64 {
	at := now
	m := &d.rmsgs[i].Hdr
	stamped := false
	if n := int(m.Controllen); n >= unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))) && m.Control != nil {
		h := (*unix.Cmsghdr)(unsafe.Pointer(m.Control))
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS {
			ts := (*unix.Timespec)(unsafe.Add(unsafe.Pointer(m.Control), unix.CmsgLen(0)))
			at, stamped = now-max(real-ts.Nano(), 0), true
		}
	}
	if !stamped {
		d.c.Unstamped++
	}
	at = min(max(at, d.last), now)
	d.last = at
	return at
}

// release sends the frames due by now, in batches.
func (d *direction) release(now int64) error {
	for d.n > 0 && !d.blocked {
		k := 0
		for k < lineBatch && k < d.n {
			q := (d.head + k) % lineSlots
			if d.qDue[q] > now {
				break
			}
			d.iov[k].Base = d.slot(d.qSlot[q])
			d.iov[k].SetLen(int(d.qSize[q]))
			k++
		}
		if k == 0 {
			return nil
		}
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(d.out), uintptr(unsafe.Pointer(&d.msgs[0])), uintptr(k), unix.MSG_DONTWAIT, 0, 0)
		sent := int(r)
		switch {
		case errno == unix.EAGAIN:
			d.blocked = true
			return nil
		case errno == unix.EINTR:
			continue
		case fatal(errno):
			return os.NewSyscallError("sendmmsg", errno)
		case errno != 0:
			// The first frame failed (ENOBUFS: B's backlog is full;
			// ENETDOWN): it is lost, as on a wire.
			d.c.SendFailed++
			d.pop(1)
			continue
		}
		d.c.Passed += int64(sent)
		d.pop(sent)
	}
	return nil
}

// pop takes k frames off the FIFO's head and frees their slots.
func (d *direction) pop(k int) {
	for range k {
		d.free = append(d.free, d.qSlot[d.head])
		d.head = (d.head + 1) % lineSlots
		d.n--
	}
}
