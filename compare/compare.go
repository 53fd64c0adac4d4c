// Package compare runs the same test once per backend and puts the results
// side by side: throughput, packets per second, CPU time of each end, CPU
// per gigabyte, I/O calls and bytes per call, and the bytes that were not
// copied between user memory and the kernel.
//
// In lab mode both ends run in this process, each in its own network
// namespace of a netlab lab (root only), joined by a veth pair.
// In the HOST form this host runs one end and a blast server the other,
// through package control; the server's half of each row comes from the
// blast extensions of its results.
package compare

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/stats"
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

	// Plan repeats each row (--repeat, --confidence): the row's
	// throughput is then the mean, with its interval in Row.Repeat.
	Plan stats.Plan
	// Progress, when set, hears each row as it starts: its number (from
	// 1), the number of rows, and its name.
	Progress func(n, of int, name string)
}

// Case is one row: a sending and a receiving backend with their options.
type Case struct {
	Tx, Rx string
	// TxOpts and RxOpts are backend options as --backend takes them
	// after the colon ("gso", "batch=64,gro").
	TxOpts, RxOpts string
}

// Name is "tx[opts] -> rx[opts]".
func (c Case) Name() string {
	side := func(n string, o string) string {
		if o == "" {
			return n
		}
		return n + "[" + o + "]"
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
			{Tx: "mmsg", Rx: "mmsg", TxOpts: "gso", RxOpts: "gro"},
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
		{Tx: "iouring", Rx: "readwrite", TxOpts: "zc"},
		{Tx: "readwrite", Rx: "splice"},
		{Tx: "readwrite", Rx: "trunc"},
		{Tx: "readwrite", Rx: "iouring", RxOpts: "multishot"},
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
	TxCPUUnknown bool    `json:"tx_cpu_unknown,omitempty"`
	RxCPUUnknown bool    `json:"rx_cpu_unknown,omitempty"`
	RxCPU        CPU     `json:"rx_cpu"`
	CPUPerGB     float64 `json:"cpu_seconds_per_gb"`
	// NotCopied is the bytes either end moved without a copy between
	// user memory and the kernel; TxNotCopied and RxNotCopied each end's
	// share of it (a write(2) sender copies every byte, whatever the
	// receiver does).
	NotCopied   int64    `json:"bytes_not_copied"`
	TxNotCopied int64    `json:"tx_bytes_not_copied"`
	RxNotCopied int64    `json:"rx_bytes_not_copied"`
	TxSyscalls  int64    `json:"tx_syscalls,omitempty"`
	RxSyscalls  int64    `json:"rx_syscalls,omitempty"`
	Notes       []string `json:"notes,omitempty"`
	// TxFacts and RxFacts are each end's backend facts (engine.Facts).
	TxFacts   map[string]int64 `json:"tx_facts,omitempty"`
	RxFacts   map[string]int64 `json:"rx_facts,omitempty"`
	SentBytes int64            `json:"bytes_sent"`
	// Drained is what the receiver read after a time-limited test's end
	// (the tail that was on its way): in none of Bytes and the rate.
	Drained     int64   `json:"bytes_drained,omitempty"`
	SentDgrams  int64   `json:"datagrams_sent,omitempty"`
	LostPercent float64 `json:"lost_percent,omitempty"`
	// LocalEnd is, in the HOST form, the end this host ran: "tx" or "rx"
	// (the other ran on the server). CPU is then each end's whole process.
	// Empty in lab mode, where both ends are threads of this process.
	LocalEnd string `json:"local_end,omitempty"`
	// Repeat holds every run's throughput and their summary when the row
	// ran several times; BitsPerSec is then their mean, and the other
	// columns are the last run's.
	Repeat *stats.Result `json:"repeat,omitempty"`
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
	for i, c := range cases {
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		row, err := repeated(ctx, cfg, i+1, len(cases), c.Name(), func() (Row, error) { return runCase(ctx, cfg, lab, c), nil })
		rows = append(rows, row)
		if err != nil {
			return rows, err
		}
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
	txSock, rxSock, err := connect(ctx, lab, cfg.UDP)
	if err != nil {
		return fail(err)
	}
	defer txSock.Close()
	defer rxSock.Close()

	proto := engine.TCP
	if cfg.UDP {
		proto = engine.UDP
	}
	txFlow := &engine.Flow{Sock: txSock, Spec: &engine.Spec{Protocol: proto, BufLen: cfg.BufLen, Duration: cfg.Duration}, Stats: &engine.Counters{}}
	rxLen := cfg.BufLen
	if cfg.UDP {
		rxLen = max(cfg.BufLen, 2048)
	}
	rxFlow := &engine.Flow{Sock: rxSock, Spec: &engine.Spec{Protocol: proto, BufLen: rxLen, SentinelMax: 4}, Stats: &engine.Counters{}}

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
	rxDone := make(chan error, 1)
	go func() { rxDone <- engine.Run(rctx, rx, rxFlow, false) }()
	start := time.Now()
	txErr := engine.Run(ctx, tx, txFlow, true)
	elapsed := time.Since(start)
	if cfg.UDP {
		// The end sentinel, a few times in case one is lost.
		for range 5 {
			txSock.Write([]byte("end!"))
			time.Sleep(20 * time.Millisecond)
		}
	} else {
		txSock.CloseWrite()
	}
	var rxErr error
	select {
	case rxErr = <-rxDone:
	case <-time.After(3 * time.Second):
		cancel()
		rxErr = <-rxDone
		if errors.Is(rxErr, context.Canceled) {
			rxErr = nil // the receiver missed the end: count what it got
		}
	}
	if txErr != nil {
		return fail(fmt.Errorf("send: %w", txErr))
	}
	if rxErr != nil {
		return fail(fmt.Errorf("receive: %w", rxErr))
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
	tf, rf := txFlow.Facts.Snapshot(), rxFlow.Facts.Snapshot()
	// A backend that moves data on threads of its own spends CPU this
	// thread's clock does not see: that end's CPU is unknown, not zero.
	row.TxCPUUnknown = tf.Counts[engine.FactOwnThreads] > 0
	row.RxCPUUnknown = rf.Counts[engine.FactOwnThreads] > 0
	row.TxCPU, row.RxCPU = flowCPU(txFlow.CPU), flowCPU(rxFlow.CPU)
	if rs.Bytes > 0 && !row.TxCPUUnknown && !row.RxCPUUnknown {
		row.CPUPerGB = (row.TxCPU.Total() + row.RxCPU.Total()) / (float64(rs.Bytes) / 1e9)
	}
	row.TxNotCopied, row.RxNotCopied = tf.Counts[engine.FactBytesNotCopied], rf.Counts[engine.FactBytesNotCopied]
	row.NotCopied = row.TxNotCopied + row.RxNotCopied
	row.TxSyscalls, row.RxSyscalls = tf.Counts[engine.FactSyscalls], rf.Counts[engine.FactSyscalls]
	row.Notes = engine.SumFacts(tf, rf).Notes
	row.TxFacts, row.RxFacts = tf.Counts, rf.Counts
	return row
}

func backend(name, opts string) (engine.Backend, error) {
	b, _, err := engine.Open(name, opts)
	return b, err
}

// flowCPU converts the engine's CPU times to the row's seconds.
func flowCPU(c engine.CPUTimes) CPU {
	return CPU{User: c.User.Seconds(), Sys: c.System.Seconds()}
}

// connect makes a connection from lab host A (the sender) to B, on
// sockets the engine made. The UDP receiver gets a large buffer (beyond
// rmem_max as root), so a UDP comparison measures the backends, not the
// default queue.
func connect(ctx context.Context, lab *netlab.Lab, udp bool) (tx, rx *engine.Socket, err error) {
	dst := netip.AddrPortFrom(lab.B.Addr4, 0)
	if udp {
		if err := lab.B.Do(func() error {
			rx, err = engine.ListenUDP(ctx, "udp4", dst.String(), engine.SockOpts{TOS: engine.NoTOS, RcvBuf: 32 << 20, ForceBuf: true})
			return err
		}); err != nil {
			return nil, nil, err
		}
		if err := lab.A.Do(func() error {
			tx, err = engine.Dial(ctx, "udp4", rx.LocalAddr().String(), engine.SockOpts{TOS: engine.NoTOS})
			return err
		}); err != nil {
			rx.Close()
			return nil, nil, err
		}
		// Connect B back to A so the receiver's flow is connected too.
		if err := rx.Connect(tx.LocalAddr()); err != nil {
			tx.Close()
			rx.Close()
			return nil, nil, err
		}
		return tx, rx, nil
	}
	var ln *engine.Listener
	if err := lab.B.Do(func() error {
		ln, err = engine.Listen(ctx, "tcp4", dst.String(), engine.SockOpts{TOS: engine.NoTOS})
		return err
	}); err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	type accepted struct {
		s   *engine.Socket
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		s, err := ln.Accept(ctx)
		ch <- accepted{s, err}
	}()
	if err := lab.A.Do(func() error {
		tx, err = engine.Dial(ctx, "tcp4", ln.Addr().String(), engine.SockOpts{TOS: engine.NoTOS})
		return err
	}); err != nil {
		ln.Close()
		<-ch
		return nil, nil, err
	}
	a := <-ch
	if a.err != nil {
		tx.Close()
		return nil, nil, fmt.Errorf("compare: accept: %w", a.err)
	}
	return tx, a.s, nil
}
