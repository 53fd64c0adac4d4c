package compare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
)

// ErrNotBlast is what RunHost returns (wrapped, naming the host) when the
// server answered as plain iperf3 does: its results carry no blast
// extensions, so the far end's backend, CPU time and I/O counters are
// unknown.
var ErrNotBlast = errors.New("compare HOST needs a blast server there")

// ErrHostUDP is what RunHost returns for a UDP comparison: client/server
// mode carries TCP only so far.
var ErrHostUDP = errors.New("compare HOST compares TCP backends only: client/server mode does not carry UDP yet; compare the UDP backends with --lab")

// RunHost runs every case against the blast server at cfg.Host, one
// client/server test per case: this host sends (receives with
// cfg.Reverse) and the server runs the other end with the backend the case
// names. The far end's CPU time, I/O counters and backend facts come from
// the blast extensions of its results.
//
// A case that cannot run here, or fails while it runs, is a row with its
// Error; a server that cannot be reached, refuses the test, or is not blast
// (ErrNotBlast) ends the comparison with an error, after the rows so far.
func RunHost(ctx context.Context, cfg Config) ([]Row, error) {
	if cfg.UDP {
		return nil, ErrHostUDP
	}
	cases := cfg.Cases
	if cases == nil {
		cases = DefaultCases(false)
	}
	var rows []Row
	for i, c := range cases {
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		row, err := repeated(ctx, cfg, i+1, len(cases), c.Name(), func() (Row, error) { return runHostCase(ctx, cfg, c) })
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// runHostCase runs one case against the server. An error is one that ends
// the whole comparison.
func runHostCase(ctx context.Context, cfg Config, c Case) (Row, error) {
	row := Row{Case: c.Name(), LocalEnd: "tx"}
	if cfg.Reverse {
		row.LocalEnd = "rx"
	}
	// control.Run sets up both backends here whichever way the bytes go:
	// one it cannot is this case's failure, not the server's.
	for _, b := range []struct {
		name string
		o    string
	}{{c.Tx, c.TxOpts}, {c.Rx, c.RxOpts}} {
		if _, err := backend(b.name, b.o); err != nil {
			row.Error = err.Error()
			return row, nil
		}
	}
	res, err := control.Run(ctx, control.Config{
		Host: cfg.Host, Port: cfg.Port, Duration: cfg.Duration, BlockLen: cfg.BufLen, Reverse: cfg.Reverse,
		Backend: c.Tx, RxBackend: c.Rx, BackendOptions: c.TxOpts, RxBackendOptions: c.RxOpts,
		NoNIC: true,
	})
	if res == nil {
		return row, err // the test never started: the server or the path
	}
	if err != nil {
		row.Error = err.Error()
		return row, nil
	}
	if res.RemoteVersion == "" {
		port := cfg.Port
		if port == 0 {
			port = wire.DefaultPort
		}
		addr := net.JoinHostPort(cfg.Host, strconv.Itoa(port))
		return row, fmt.Errorf("%s runs plain iperf3 (no blast extensions in its results): %w: run 'blast server' on %s", addr, ErrNotBlast, cfg.Host)
	}
	fillHostRow(&row, c, res)
	switch {
	case len(res.RemoteErrors) > 0:
		row.Error = "on the server: " + strings.Join(res.RemoteErrors, "; ")
	case row.Bytes == 0:
		row.Error = "no bytes arrived"
	}
	return row, nil
}

// fillHostRow turns a client's Result into the row: which end is the
// sender follows from the direction, the far end's figures from the blast
// extensions of its results.
func fillHostRow(row *Row, c Case, res *result.Result) {
	localCPU, remoteCPU := cpuOf(res.CPU), cpuOf(res.RemoteCPU)
	var tx, rx engine.Sample
	var tf, rf engine.FactSample
	var secs float64
	localSends := false
	for _, st := range res.Streams {
		local, peer := st.IO, engine.Sample{}
		if st.PeerIO != nil {
			peer = *st.PeerIO
		}
		lf, pf := st.Facts, engine.FactSample{}
		if st.PeerFacts != nil {
			pf = *st.PeerFacts
		}
		if !st.Sender {
			local, peer = peer, local
			lf, pf = pf, lf
		} else {
			localSends = true
		}
		tx, rx = engine.Add(tx, local), engine.Add(rx, peer)
		tf, rf = engine.SumFacts(tf, lf), engine.SumFacts(rf, pf)
		rb, rs := st.ReceivedBytes()
		row.Bytes += max(rb, 0)
		secs = max(secs, rs)
		if d := st.Drained; !st.Sender && d != nil {
			row.Drained += d.Bytes
		} else if d := st.PeerDrained; st.Sender && d != nil {
			row.Drained += d.Bytes
		}
	}
	// What the sender wrote: the calls compared are its writes (a TCP
	// sender's own count is what was acknowledged in the test's time).
	row.SentBytes = tx.Bytes
	row.TxCPU, row.RxCPU = localCPU, remoteCPU
	txName, rxName := res.Backend, res.RemoteBackend
	if !localSends {
		row.TxCPU, row.RxCPU = remoteCPU, localCPU
		txName, rxName = rxName, txName
	}
	if txName != c.Tx || rxName != c.Rx {
		row.Notes = append(row.Notes, fmt.Sprintf("asked for %s -> %s, the bytes moved with %s -> %s", c.Tx, c.Rx, txName, rxName))
		row.Case = Case{Tx: txName, Rx: rxName, TxOpts: c.TxOpts, RxOpts: c.RxOpts}.Name()
	}
	row.Seconds = secs
	if secs > 0 {
		row.BitsPerSec = float64(row.Bytes) * 8 / secs
	}
	row.Tx, row.Rx = tx, rx
	row.TxCalls, row.RxCalls = tx.DataCalls(), rx.DataCalls()
	row.TxPerCall, row.RxPerCall = tx.AvgIO(), rx.AvgIO()
	if row.Bytes > 0 {
		row.CPUPerGB = (row.TxCPU.Total() + row.RxCPU.Total()) / (float64(row.Bytes) / 1e9)
	}
	row.TxNotCopied, row.RxNotCopied = tf.Counts[engine.FactBytesNotCopied], rf.Counts[engine.FactBytesNotCopied]
	row.NotCopied = row.TxNotCopied + row.RxNotCopied
	row.TxSyscalls, row.RxSyscalls = tf.Counts[engine.FactSyscalls], rf.Counts[engine.FactSyscalls]
	row.TxFacts, row.RxFacts = tf.Counts, rf.Counts
	row.Notes = append(row.Notes, res.Notes...)
	row.Notes = append(row.Notes, engine.SumFacts(tf, rf).Notes...)
}

// cpuOf is the CPU time, in seconds, of one end of a control test.
func cpuOf(u result.CPUUtil) CPU {
	return CPU{User: u.UserSeconds, Sys: u.SystemSeconds}
}
