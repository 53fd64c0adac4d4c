// Package compare runs the same test once per backend and puts the results
// side by side: throughput, packets per second, CPU time of each end, CPU
// per gigabyte, I/O calls and bytes per call, and the bytes that were not
// copied between user memory and the kernel.
//
// In lab mode both ends run in this process, each in its own network
// namespace of an internal/netlab lab (root only), joined by a veth pair.
// In the HOST form this host runs one end and a blast server the other,
// through package control; the server's half of each row comes from the
// blast extensions of its results.
package compare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"time"

	"github.com/blastnet/blast/engine"
	_ "github.com/blastnet/blast/engine/afxdp"   // the backends compared
	_ "github.com/blastnet/blast/engine/sockets" // the backends compared
	"github.com/blastnet/blast/internal/netlab"
)

// Config is one comparison.
type Config struct {
	UDP      bool
	Duration time.Duration // per backend
	BufLen   int
	// Cases to run; nil: DefaultCases for the protocol.
	Cases []Case

	// Host and Port are the blast server RunHost measures against (port
	// 0: 5201); Reverse makes the server the sender.
	Host    string
	Port    int
	Reverse bool
}

// Case is one row: a sending and a receiving backend with their options.
type Case struct {
	Tx, Rx         string
	TxOpts, RxOpts engine.Options
}

// Name is "tx[opts] -> rx[opts]".
func (c Case) Name() string {
	side := func(n string, o engine.Options) string {
		if o.IsZero() {
			return n
		}
		return n + "[" + o.String() + "]"
	}
	return side(c.Tx, c.TxOpts) + " -> " + side(c.Rx, c.RxOpts)
}

// DefaultCases are the rows of a TCP or UDP comparison: each sending
// strategy against a readwrite receiver, each receiving strategy against a
// readwrite sender.
func DefaultCases(udp bool) []Case {
	if udp {
		return []Case{
			{Tx: "readwrite", Rx: "readwrite"},
			{Tx: "mmsg", Rx: "mmsg"},
			{Tx: "mmsg", Rx: "mmsg", TxOpts: engine.Options{GSO: true}, RxOpts: engine.Options{GRO: true}},
			{Tx: "iouring", Rx: "iouring"},
			{Tx: "zerocopy", Rx: "readwrite"},
			{Tx: "readwrite", Rx: "trunc"},
			// Skipped, with the reason, where AF_XDP is not usable
			// (not root, no CONFIG_XDP_SOCKETS).
			{Tx: "afxdp", Rx: "afxdp"},
			{Tx: "mmsg", Rx: "afxdp"},
		}
	}
	return []Case{
		{Tx: "readwrite", Rx: "readwrite"},
		{Tx: "sendfile", Rx: "readwrite"},
		{Tx: "splice", Rx: "readwrite"},
		{Tx: "zerocopy", Rx: "readwrite"},
		{Tx: "iouring", Rx: "readwrite"},
		{Tx: "iouring", Rx: "readwrite", TxOpts: engine.Options{ZeroCopy: true}},
		{Tx: "readwrite", Rx: "splice"},
		{Tx: "readwrite", Rx: "trunc"},
		{Tx: "readwrite", Rx: "iouring", RxOpts: engine.Options{Multishot: true}},
	}
}

// Row is the result of one case.
type Row struct {
	Case  string `json:"case"`
	Error string `json:"error,omitempty"`
	// Skipped says why the case did not run: a backend is not usable
	// here (engine.Usable).
	Skipped    string        `json:"skipped,omitempty"`
	Seconds    float64       `json:"seconds"`
	Bytes      int64         `json:"bytes_received"`
	Datagrams  int64         `json:"datagrams_received,omitempty"`
	BitsPerSec float64       `json:"bits_per_second"`
	PacketsSec float64       `json:"packets_per_second,omitempty"`
	Tx, Rx     engine.Sample `json:"-"`
	TxCalls    int64         `json:"tx_io_calls"`
	RxCalls    int64         `json:"rx_io_calls"`
	TxPerCall  float64       `json:"tx_bytes_per_call"`
	RxPerCall  float64       `json:"rx_bytes_per_call"`
	TxCPU      CPU           `json:"tx_cpu"`
	// TxCPUUnknown and RxCPUUnknown mark an end whose backend ran on
	// threads of its own (engine.FactOwnThreads): its CPU is not measured.
	TxCPUUnknown bool     `json:"tx_cpu_unknown,omitempty"`
	RxCPUUnknown bool     `json:"rx_cpu_unknown,omitempty"`
	RxCPU        CPU      `json:"rx_cpu"`
	CPUPerGB     float64  `json:"cpu_seconds_per_gb"`
	NotCopied    int64    `json:"bytes_not_copied"`
	TxSyscalls   int64    `json:"tx_syscalls,omitempty"`
	RxSyscalls   int64    `json:"rx_syscalls,omitempty"`
	Notes        []string `json:"notes,omitempty"`
	// TxFacts and RxFacts are each end's backend facts (engine.Facts).
	TxFacts     map[string]int64 `json:"tx_facts,omitempty"`
	RxFacts     map[string]int64 `json:"rx_facts,omitempty"`
	SentBytes   int64            `json:"bytes_sent"`
	SentDgrams  int64            `json:"datagrams_sent,omitempty"`
	LostPercent float64          `json:"lost_percent,omitempty"`
	// LocalEnd is, in the HOST form, the end this host ran: "tx" or "rx"
	// (the other ran on the server). CPU is then each end's whole process.
	// Empty in lab mode, where both ends are threads of this process.
	LocalEnd string `json:"local_end,omitempty"`
}

// CPU is the CPU time one end's thread used.
type CPU struct {
	User float64 `json:"user_seconds"`
	Sys  float64 `json:"sys_seconds"`
}

// Total is user plus system time.
func (c CPU) Total() float64 { return c.User + c.Sys }

// RunLab builds a lab, runs every case in it and removes the lab.
func RunLab(ctx context.Context, cfg Config) (rows []Row, err error) {
	lab, err := netlab.New(netlab.Direct, netlab.Options{})
	if err != nil {
		return nil, fmt.Errorf("compare: build the lab: %w", err)
	}
	defer func() { err = errors.Join(err, lab.Close()) }()
	cases := cfg.Cases
	if cases == nil {
		cases = DefaultCases(cfg.UDP)
	}
	for _, c := range cases {
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		rows = append(rows, runCase(ctx, cfg, lab, c))
	}
	return rows, nil
}

// runCase runs one case; a failure is the row's Error.
func runCase(ctx context.Context, cfg Config, lab *netlab.Lab, c Case) Row {
	row := Row{Case: c.Name()}
	fail := func(err error) Row { row.Error = err.Error(); return row }
	for _, n := range []string{c.Tx, c.Rx} {
		if _, err := engine.Usable(n); err != nil {
			row.Skipped = err.Error()
			return row
		}
	}
	tx, err := backend(c.Tx, c.TxOpts)
	if err != nil {
		return fail(err)
	}
	rx, err := backend(c.Rx, c.RxOpts)
	if err != nil {
		return fail(err)
	}
	txConn, rxConn, err := connect(lab, cfg.UDP)
	if err != nil {
		return fail(err)
	}
	defer txConn.Close()
	defer rxConn.Close()

	proto := engine.TCP
	if cfg.UDP {
		proto = engine.UDP
	}
	txFlow := &engine.Flow{Conn: txConn, Spec: &engine.Spec{Protocol: proto, BufLen: cfg.BufLen, Duration: cfg.Duration}, Stats: &engine.Counters{}}
	rxLen := cfg.BufLen
	if cfg.UDP {
		rxLen = max(cfg.BufLen, 2048)
	}
	rxFlow := &engine.Flow{Conn: rxConn, Spec: &engine.Spec{Protocol: proto, BufLen: rxLen, SentinelMax: 4}, Stats: &engine.Counters{}}

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A Preparer (afxdp) sets up its receive before the sender starts, so
	// nothing the sender sends slips past it. It may be called from any
	// thread: it sets up in the namespace of the flow's socket.
	release, err := engine.Prepare(rctx, rx, rxFlow)
	if err != nil {
		return fail(fmt.Errorf("receive: prepare: %w", err))
	}
	defer release()
	type result struct {
		err error
		cpu CPU
	}
	rxDone := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t0 := threadCPU()
		err := rx.Recv(rctx, rxFlow)
		rxDone <- result{err, threadCPU().sub(t0)}
	}()
	start := time.Now()
	txDone := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t0 := threadCPU()
		err := tx.Send(ctx, txFlow)
		txDone <- result{err, threadCPU().sub(t0)}
	}()
	tr := <-txDone
	elapsed := time.Since(start)
	if cfg.UDP {
		// The end sentinel, a few times in case one is lost.
		for range 5 {
			txConn.Write([]byte("end!"))
			time.Sleep(20 * time.Millisecond)
		}
	} else if cw, ok := txConn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	var rr result
	select {
	case rr = <-rxDone:
	case <-time.After(3 * time.Second):
		cancel()
		rr = <-rxDone
		if errors.Is(rr.err, context.Canceled) {
			rr.err = nil // the receiver missed the end: count what it got
		}
	}
	if tr.err != nil {
		return fail(fmt.Errorf("send: %w", tr.err))
	}
	if rr.err != nil {
		return fail(fmt.Errorf("receive: %w", rr.err))
	}
	ts, rs := txFlow.Stats.Snapshot(), rxFlow.Stats.Snapshot()
	row.Seconds = elapsed.Seconds()
	row.Tx, row.Rx = ts, rs
	row.Bytes, row.Datagrams = rs.Bytes, rs.Datagrams
	row.SentBytes, row.SentDgrams = ts.Bytes, ts.Datagrams
	row.BitsPerSec = float64(rs.Bytes) * 8 / row.Seconds
	if cfg.UDP {
		row.PacketsSec = float64(rs.Datagrams) / row.Seconds
		if ts.Datagrams > 0 {
			row.LostPercent = 100 * float64(ts.Datagrams-rs.Datagrams) / float64(ts.Datagrams)
		}
	}
	row.TxCalls, row.RxCalls = ts.DataCalls(), rs.DataCalls()
	row.TxPerCall, row.RxPerCall = ts.AvgIO(), rs.AvgIO()
	tf, _ := engine.FlowFacts(txFlow)
	rf, _ := engine.FlowFacts(rxFlow)
	// A backend that moves data on threads of its own spends CPU this
	// thread's clock does not see: that end's CPU is unknown, not zero.
	row.TxCPUUnknown = tf.Counts[engine.FactOwnThreads] > 0
	row.RxCPUUnknown = rf.Counts[engine.FactOwnThreads] > 0
	row.TxCPU, row.RxCPU = tr.cpu, rr.cpu
	if rs.Bytes > 0 && !row.TxCPUUnknown && !row.RxCPUUnknown {
		row.CPUPerGB = (tr.cpu.Total() + rr.cpu.Total()) / (float64(rs.Bytes) / 1e9)
	}
	row.NotCopied = tf.Counts[engine.FactBytesNotCopied] + rf.Counts[engine.FactBytesNotCopied]
	row.TxSyscalls, row.RxSyscalls = tf.Counts[engine.FactSyscalls], rf.Counts[engine.FactSyscalls]
	row.Notes = engine.SumFacts(tf, rf).Notes
	row.TxFacts, row.RxFacts = tf.Counts, rf.Counts
	return row
}

func backend(name string, o engine.Options) (engine.Backend, error) {
	b, err := engine.Usable(name)
	if err != nil {
		return nil, err
	}
	return engine.Configure(b, o)
}

// connect makes a connection from lab host A (the sender) to B.
func connect(lab *netlab.Lab, udp bool) (tx, rx net.Conn, err error) {
	dst := netip.AddrPortFrom(lab.B.Addr4, 0)
	if udp {
		var a, b *net.UDPConn
		if err := lab.B.Do(func() error {
			var err error
			b, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(dst))
			return err
		}); err != nil {
			return nil, nil, err
		}
		if err := lab.A.Do(func() error {
			var err error
			a, err = net.DialUDP("udp4", nil, b.LocalAddr().(*net.UDPAddr))
			return err
		}); err != nil {
			b.Close()
			return nil, nil, err
		}
		// Connect B back to A so the receiver's flow is connected too.
		b.Close()
		if err := lab.B.Do(func() error {
			var err error
			b, err = net.DialUDP("udp4", b.LocalAddr().(*net.UDPAddr), a.LocalAddr().(*net.UDPAddr))
			return err
		}); err != nil {
			a.Close()
			return nil, nil, err
		}
		bigBuffers(b)
		return a, b, nil
	}
	var ln net.Listener
	if err := lab.B.Do(func() error {
		var err error
		ln, err = net.Listen("tcp4", net.JoinHostPort(lab.B.Addr4.String(), "0"))
		return err
	}); err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	var c net.Conn
	if err := lab.A.Do(func() error {
		var err error
		c, err = net.Dial("tcp4", ln.Addr().String())
		return err
	}); err != nil {
		return nil, nil, err
	}
	p := <-accepted
	if p == nil {
		c.Close()
		return nil, nil, errors.New("compare: accept failed")
	}
	return c, p, nil
}

// FormatRate renders bits per second with an SI prefix.
func FormatRate(bps float64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if bps >= u.div {
			return strconv.FormatFloat(bps/u.div, 'f', 2, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(bps, 'f', 0, 64) + " bit/s"
}
