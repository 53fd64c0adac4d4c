package compare

import (
	"context"
	"strings"
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/stats"
	"github.com/blastnet/blast/units"
)

// measured is what one case of a lab comparison measured; row derives
// the row's figures from it as runCase does, so the rows are consistent.
type measured struct {
	c            Case
	udp          bool
	seconds      float64
	tx, rx       engine.Sample
	txCPU, rxCPU CPU
	txFacts      map[string]int64
	rxFacts      map[string]int64
	notes        []string
	localEnd     string
}

func (m measured) row() Row {
	r := Row{Case: m.c.Name(), Seconds: m.seconds, Tx: m.tx, Rx: m.rx, LocalEnd: m.localEnd}
	r.Bytes, r.Datagrams = m.rx.Bytes, m.rx.Datagrams
	r.SentBytes, r.SentDgrams = m.tx.Bytes, m.tx.Datagrams
	r.BitsPerSec = float64(m.rx.Bytes) * 8 / m.seconds
	if m.udp {
		r.PacketsSec = float64(m.rx.Datagrams) / m.seconds
		if m.tx.Datagrams > 0 {
			r.LostPercent = 100 * float64(m.tx.Datagrams-m.rx.Datagrams) / float64(m.tx.Datagrams)
		}
	}
	r.TxCalls, r.RxCalls = m.tx.DataCalls(), m.rx.DataCalls()
	r.TxPerCall, r.RxPerCall = m.tx.AvgIO(), m.rx.AvgIO()
	r.TxCPUUnknown = m.txFacts[engine.FactOwnThreads] > 0
	r.RxCPUUnknown = m.rxFacts[engine.FactOwnThreads] > 0
	r.TxCPU, r.RxCPU = m.txCPU, m.rxCPU
	if m.rx.Bytes > 0 && !r.TxCPUUnknown && !r.RxCPUUnknown {
		r.CPUPerGB = (r.TxCPU.Total() + r.RxCPU.Total()) / (float64(m.rx.Bytes) / 1e9)
	}
	r.TxNotCopied, r.RxNotCopied = m.txFacts[engine.FactBytesNotCopied], m.rxFacts[engine.FactBytesNotCopied]
	r.NotCopied = r.TxNotCopied + r.RxNotCopied
	r.TxSyscalls, r.RxSyscalls = m.txFacts[engine.FactSyscalls], m.rxFacts[engine.FactSyscalls]
	r.TxFacts, r.RxFacts = m.txFacts, m.rxFacts
	r.Notes = m.notes
	return r
}

// stream is a TCP end that moved bytes in calls of at most max bytes.
func stream(bytes, calls, minIO, maxIO int64, idle int64) engine.Sample {
	return engine.Sample{Bytes: bytes, Calls: calls + idle, Idle: idle, MinIO: minIO, MaxIO: maxIO}
}

// dgrams is a UDP end: datagrams of size bytes, perCall to a call.
func dgrams(n, size, calls int64) engine.Sample {
	return engine.Sample{Bytes: n * size, Datagrams: n, Calls: calls, MinIO: size, MaxIO: size * ((n + calls - 1) / calls)}
}

// tcpRows is blast compare --lab -t 2: every kind of row of a TCP table.
func tcpRows() []Row {
	const blk = 131072
	return []Row{
		measured{c: Case{Tx: "readwrite", Rx: "readwrite"}, seconds: 2.000131,
			tx: stream(2336358400, 17825, blk, blk, 0), rx: stream(2336358400, 36502, 1448, blk, 1),
			txCPU: CPU{User: 0.021, Sys: 1.402}, rxCPU: CPU{User: 0.035, Sys: 1.688},
			txFacts: map[string]int64{engine.FactSyscalls: 17825}, rxFacts: map[string]int64{engine.FactSyscalls: 36503}}.row(),
		measured{c: Case{Tx: "sendfile", Rx: "readwrite"}, seconds: 2.000087,
			tx: stream(2717908992, 20736, blk, blk, 0), rx: stream(2717908992, 41112, 1448, blk, 1),
			txCPU: CPU{User: 0.004, Sys: 1.012}, rxCPU: CPU{User: 0.041, Sys: 1.795},
			txFacts: map[string]int64{engine.FactSyscalls: 20736, engine.FactBytesNotCopied: 2717908992},
			rxFacts: map[string]int64{engine.FactSyscalls: 41113}}.row(),
		measured{c: Case{Tx: "zerocopy", Rx: "readwrite"}, seconds: 2.000204,
			tx: stream(2013265920, 15360, blk, blk, 0), rx: stream(2013265920, 30011, 1448, blk, 1),
			txCPU: CPU{User: 0.012, Sys: 0.903}, rxCPU: CPU{User: 0.03, Sys: 1.561},
			txFacts: map[string]int64{engine.FactSyscalls: 15360, engine.FactBytesNotCopied: 1887436800, engine.FactZeroCopySends: 14400, engine.FactCopiedSends: 960},
			rxFacts: map[string]int64{engine.FactSyscalls: 30012},
			notes:   []string{"zerocopy: 960 of 15360 sends were copied by the kernel (the receiver is local: veth)"}}.row(),
		{Case: Case{Tx: "iouring", Rx: "readwrite", TxOpts: "zc"}.Name(),
			Error: "send: io_uring: IORING_OP_SEND_ZC: operation not supported (Linux 6.0 or later)"},
		measured{c: Case{Tx: "readwrite", Rx: "trunc"}, seconds: 2.000052,
			tx: stream(3101687808, 23664, blk, blk, 0), rx: stream(3101687808, 23730, 65483, blk, 1),
			txCPU: CPU{User: 0.025, Sys: 1.611}, rxCPU: CPU{User: 0.002, Sys: 0.412},
			txFacts: map[string]int64{engine.FactSyscalls: 23664},
			rxFacts: map[string]int64{engine.FactSyscalls: 23731, engine.FactBytesNotCopied: 3101687808}}.row(),
		{Case: Case{Tx: "readwrite", Rx: "iouring", RxOpts: "multishot"}.Name(),
			Skipped: "iouring: io_uring is disabled here (sysctl kernel.io_uring_disabled=2)"},
	}
}

// udpRows is blast compare --lab -u -t 2 -l 64: datagram rates and loss,
// AF_XDP ends whose CPU is not measured, a failure and a skipped case.
func udpRows() []Row {
	return []Row{
		measured{c: Case{Tx: "readwrite", Rx: "readwrite"}, udp: true, seconds: 2.000311,
			tx: dgrams(1203340, 64, 1203340), rx: dgrams(1198212, 64, 1198212),
			txCPU: CPU{User: 0.211, Sys: 1.702}, rxCPU: CPU{User: 0.187, Sys: 1.664}}.row(),
		measured{c: Case{Tx: "mmsg", Rx: "mmsg", TxOpts: "gso", RxOpts: "gro"}, udp: true, seconds: 2.000098,
			tx: dgrams(5322880, 64, 83170), rx: dgrams(5101312, 64, 80911),
			txCPU: CPU{User: 0.102, Sys: 1.811}, rxCPU: CPU{User: 0.144, Sys: 1.790},
			txFacts: map[string]int64{engine.FactSyscalls: 83170}, rxFacts: map[string]int64{engine.FactSyscalls: 80911}}.row(),
		{Case: Case{Tx: "zerocopy", Rx: "readwrite"}.Name(),
			Error: "send: sendmsg: no buffer space available (the zero-copy completion queue is full: raise net.core.optmem_max)"},
		measured{c: Case{Tx: "afxdp", Rx: "afxdp"}, udp: true, seconds: 2.000012,
			tx: dgrams(9830400, 64, 153600), rx: dgrams(9830272, 64, 160412),
			txCPU: CPU{User: 0.401, Sys: 1.599}, rxCPU: CPU{User: 0.822, Sys: 1.161},
			txFacts: map[string]int64{engine.FactOwnThreads: 1},
			rxFacts: map[string]int64{engine.FactOwnThreads: 1},
			notes: []string{"afxdp: 2 sending threads (the flow's and 1 of its own), one per queue",
				"afxdp: XDP program attached in generic mode, UDP port 40000 only"}}.row(),
		measured{c: Case{Tx: "mmsg", Rx: "afxdp"}, udp: true, seconds: 2.000027,
			tx: dgrams(4718592, 64, 73728), rx: dgrams(4718592, 64, 77312),
			txCPU: CPU{User: 0.087, Sys: 1.702}, rxCPU: CPU{User: 0.511, Sys: 0.904},
			txFacts: map[string]int64{engine.FactSyscalls: 73728},
			rxFacts: map[string]int64{engine.FactOwnThreads: 1}}.row(),
		{Case: Case{Tx: "iouring", Rx: "iouring"}.Name(),
			Skipped: "iouring: io_uring is disabled here (sysctl kernel.io_uring_disabled=2)"},
	}
}

// hostRows is blast compare -R HOST: the server sends, this host receives;
// CPU is each end's whole process.
func hostRows() []Row {
	const blk = 131072
	return []Row{
		measured{c: Case{Tx: "readwrite", Rx: "readwrite"}, seconds: 2.040211, localEnd: "rx",
			tx: stream(2147483648, 16384, blk, blk, 0), rx: stream(2147352576, 33912, 1448, blk, 1),
			txCPU: CPU{User: 0.06, Sys: 1.49}, rxCPU: CPU{User: 0.08, Sys: 1.72}}.row(),
		measured{c: Case{Tx: "splice", Rx: "readwrite"}, seconds: 2.040003, localEnd: "rx",
			tx: stream(2415919104, 18432, blk, blk, 0), rx: stream(2415919104, 38004, 1448, blk, 1),
			txCPU: CPU{User: 0.01, Sys: 1.22}, rxCPU: CPU{User: 0.09, Sys: 1.81},
			txFacts: map[string]int64{engine.FactBytesNotCopied: 2415919104}}.row(),
	}
}

func TestTableGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []Row
		udp  bool
		unit units.Format
	}{
		{"lab-tcp", tcpRows(), false, 0},
		{"lab-udp", udpRows(), true, 0},
		{"host-reverse", hostRows(), false, 0},
		{"lab-tcp-confidence", repeatedRows(), false, 0},
		{"lab-tcp-f-m", tcpRows(), false, 'm'},
		{"lab-tcp-f-G", tcpRows(), false, 'G'},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteTable(&b, tc.rows, tc.udp, tc.unit); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/"+tc.name+".txt", b.String())
			if tc.unit != 0 {
				return // -f changes the text only
			}
			var j strings.Builder
			if err := WriteJSON(&j, tc.rows); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/"+tc.name+".json", j.String())
		})
	}
}

// repeatedRows are tcpRows run with --confidence 95,5: each row that ran
// carries its runs, its throughput is their mean; two rows overlap.
func repeatedRows() []Row {
	rows := tcpRows()
	runs := [][]float64{
		{18.1e9, 18.4e9, 18.2e9},
		{24.6e9, 25.1e9, 24.9e9, 24.8e9, 24.9e9, 24.85e9, 24.9e9, 24.8e9, 24.9e9, 24.85e9},
		{24.2e9, 25.5e9, 24.8e9, 25.0e9, 24.4e9, 25.3e9, 24.1e9, 25.6e9, 24.9e9, 24.0e9},
	}
	k := 0
	for i := range rows {
		if rows[i].Skipped != "" || rows[i].Error != "" || k == len(runs) {
			continue
		}
		p := stats.Plan{Level: 0.95, Width: 5, MinRuns: 3, MaxRuns: 10}
		res, _ := stats.Run(context.Background(), p, func(n int) (float64, error) { return runs[k][n], nil })
		rows[i].BitsPerSec, rows[i].Repeat = res.Summary.Mean, &res
		k++
	}
	return rows
}

func TestNotDifferent(t *testing.T) {
	rows := repeatedRows()
	got := NotDifferent(rows)
	var pairs []string
	for i, js := range got {
		for _, j := range js {
			pairs = append(pairs, rows[i].Case+" ~ "+rows[j].Case)
		}
	}
	want := []string{rows[1].Case + " ~ " + rows[2].Case, rows[2].Case + " ~ " + rows[1].Case}
	if strings.Join(pairs, "; ") != strings.Join(want, "; ") {
		t.Errorf("not different: %q, want %q", pairs, want)
	}
}
