package bench

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/blastnet/blast/netlab"
)

const (
	ttcpPort  = 5001
	iperfPort = 5201
)

// ttcpSpec is a classic-mode run: blast -t in A to blast -r in B.
type ttcpSpec struct {
	id               string
	udp              bool
	bufLen           int
	txBackend, txOpt string
	rxBackend, rxOpt string
}

// backendArgs are the flags that select backend name with options opts.
func (e *Env) backendArgs(name, opts string) []string {
	if name == "" {
		return nil
	}
	if opts == "" {
		return []string{"--backend", name}
	}
	return e.Caps.OptionArgs(name, opts)
}

func (s ttcpSpec) argv(e *Env, n int64) (rx, tx []string) {
	l := strconv.Itoa(s.bufLen)
	rx = []string{e.Blast, "-r", "-s", "-l", l, "-p", strconv.Itoa(ttcpPort)}
	tx = []string{e.Blast, "-t", "-s", "-l", l, "-n", strconv.FormatInt(n, 10), "-p", strconv.Itoa(ttcpPort)}
	if s.udp {
		rx = append(rx, "-u")
		tx = append(tx, "-u")
	}
	rx = append(rx, e.backendArgs(s.rxBackend, s.rxOpt)...)
	tx = append(tx, e.backendArgs(s.txBackend, s.txOpt)...)
	tx = append(tx, e.target())
	return rx, tx
}

func (s ttcpSpec) network() string {
	if s.udp {
		return "udp"
	}
	return "tcp"
}

// run sends n buffers and measures what the receiver got.
func (s ttcpSpec) run(ctx context.Context, e *Env, n int64) (Sample, TTCPResult) {
	rxArgv, txArgv := s.argv(e, n)
	srv, cli, err := clientServer(ctx, e.Lab.B, rxArgv, s.network(), ttcpPort, e.Lab.A, txArgv, e.timeout(), false)
	if err != nil {
		return failed(err, srv, cli), TTCPResult{}
	}
	rr, err1 := ParseTTCP(srv.stdout.String())
	tr, err2 := ParseTTCP(cli.stdout.String())
	if err1 != nil || err2 != nil {
		return failed(fmt.Errorf("parse: %w", firstErr(err1, err2)), srv, cli), tr
	}
	rs, ts := srv.stats(), cli.stats()
	rs.Role, ts.Role = "receiver", "sender"
	rs.setBytes(rr.Bytes)
	ts.setBytes(tr.Bytes)
	smp := Sample{Procs: []ProcStats{ts, rs}, Loss: nan()}
	if s.udp {
		smp.Value = Num(Ratio(float64(rr.Datagrams), rr.Seconds))
		smp.Loss = Num(1 - Ratio(float64(rr.Datagrams), float64(tr.Datagrams)))
	} else {
		smp.Value = Num(Ratio(float64(rr.Bytes)*8, rr.Seconds) / 1e9)
	}
	return smp, tr
}

// calibrate sizes the run to about e.Secs seconds from warm-up runs that
// grow until one lasts long enough to time.
func (s ttcpSpec) calibrate(ctx context.Context, e *Env) error {
	n := int64(200 << 20 / s.bufLen) // 200 MB of TCP
	if s.udp {
		n = 50_000
	}
	for range 4 {
		smp, tr := s.run(ctx, e, n)
		if smp.Err != "" {
			return fmt.Errorf("calibration run: %s", smp.Err)
		}
		if tr.Seconds >= 0.25 || tr.Seconds > 0 && n > 1<<34 {
			rate := float64(n) / tr.Seconds
			e.counts[s.id] = max(1000, int64(rate*float64(e.Secs)))
			return nil
		}
		n *= 8
	}
	return fmt.Errorf("calibration: runs stay too short to time")
}

func (s ttcpSpec) side(label string) Side {
	return Side{Label: label, Run: func(ctx context.Context, e *Env) Sample {
		smp, _ := s.run(ctx, e, e.counts[s.id])
		return smp
	}}
}

// iperf3 returns the binary of the iperf3 peer key, or nil.
func (e *Env) iperf3(key string) *Iperf3 {
	if key == PeerIperf3Modern {
		return e.Modern
	}
	return e.Iperf3
}

// iperfSide runs `iperf3 -s -1` in B and `iperf3 -c -t SECS` in A with
// extra client flags, with the iperf3 of key (PeerIperf3 or
// PeerIperf3Modern).
//
// iperf3 runs for the suite's seconds even where blast's ttcp run is
// sized in bytes: the multi-threaded iperf3 ends a -n run only at its
// next one-second tick, so a -n run of 1.4 s reports 2 s and understates the
// rate by 30% (seen with 3.21; 3.12 times -n runs exactly).
func iperfSide(key, label string, m metric, flags []string) Side {
	sd := Side{Key: key, Label: label, Run: func(ctx context.Context, e *Env) Sample {
		ip := e.iperf3(key)
		srvArgv := []string{ip.Path, "-s", "-1", "-p", strconv.Itoa(iperfPort)}
		cliArgv := append([]string{ip.Path, "-c", e.target(), "-p", strconv.Itoa(iperfPort), "-J"}, flags...)
		cliArgv = append(cliArgv, "-t", strconv.Itoa(e.Secs))
		return clientServerJSON(ctx, e, srvArgv, cliArgv, m)
	}}
	if key == PeerIperf3 {
		sd.Tool = "iperf3"
		sd.Unavailable = func(e *Env) string {
			if e.Iperf3 == nil {
				return "no iperf3 (Debian package iperf3)"
			}
			return ""
		}
	} else {
		sd.Unavailable = needModern
	}
	return sd
}

// iperfSides are the same iperf3 run with Debian's iperf3 and with the
// modern one.
func iperfSides(label string, m metric, flags []string) []Side {
	return []Side{
		iperfSide(PeerIperf3, label, m, flags),
		iperfSide(PeerIperf3Modern, label, m, flags),
	}
}

func needModern(e *Env) string {
	if e.Modern == nil {
		return "no iperf3 " + ModernIperf3.String() + " or later here (blastbench --iperf3 PATH)"
	}
	return ""
}

// needGSRO is needModern for a run with --gsro: the modern iperf3 must
// have it (3.21 built with GSO/GRO support).
func needGSRO(e *Env) string {
	if why := needModern(e); why != "" {
		return why
	}
	if !e.Modern.Version.GSRO {
		return e.Modern.Name() + " has no --gsro (3.21 or later, built with GSO/GRO support)"
	}
	return ""
}

// blastClientSide runs `blast server -1` in B and `blast client` in A.
func blastClientSide(label string, flags []string) Side {
	return blastClientMetric(label, metricGbps, flags)
}

// blastClientMetric is blastClientSide measuring m.
func blastClientMetric(label string, m metric, flags []string) Side {
	return Side{Key: "blast", Label: label, Run: func(ctx context.Context, e *Env) Sample {
		srvArgv := []string{e.Blast, "server", "-1", "-p", strconv.Itoa(iperfPort)}
		cliArgv := append([]string{e.Blast, "client", e.target(), "-p", strconv.Itoa(iperfPort), "-J",
			"-t", strconv.Itoa(e.Secs)}, flags...)
		return clientServerJSON(ctx, e, srvArgv, cliArgv, m)
	}}
}

// threadsClientSide is blastClientSide with BLAST_THREADS=threads on both
// ends: every flow free, or every flow on a locked thread.
func threadsClientSide(key, threads, label string, flags []string) Side {
	return Side{Key: key, Label: label, Run: func(ctx context.Context, e *Env) Sample {
		env := []string{"/usr/bin/env", "BLAST_THREADS=" + threads, e.Blast}
		srvArgv := append(env[:3:3], "server", "-1", "-p", strconv.Itoa(iperfPort))
		cliArgv := append(append(env[:3:3], "client", e.target(), "-p", strconv.Itoa(iperfPort), "-J",
			"-t", strconv.Itoa(e.Secs)), flags...)
		return clientServerJSON(ctx, e, srvArgv, cliArgv, metricGbps)
	}}
}

// metric is what a client/server run measures.
type metric int

const (
	metricGbps    metric = iota // TCP: received Gbit/s
	metricPPS                   // UDP: delivered datagrams/s, and the loss
	metricUDPGbps               // UDP: received Gbit/s, and the loss
)

// clientServerJSON runs an iperf3-protocol server and client and reads the
// client's -J document.
func clientServerJSON(ctx context.Context, e *Env, srvArgv, cliArgv []string, m metric) Sample {
	srv, cli, err := clientServer(ctx, e.Lab.B, srvArgv, "tcp", iperfPort, e.Lab.A, cliArgv, e.timeout(), false)
	if err != nil {
		return failed(err, srv, cli)
	}
	r, err := ParseIperf3([]byte(cli.stdout.String()))
	if err != nil {
		return failed(err, srv, cli)
	}
	rs, ts := srv.stats(), cli.stats()
	rs.Role, ts.Role = "receiver", "sender"
	rs.setBytes(r.RecvBytes)
	ts.setBytes(r.SentBytes)
	smp := Sample{Procs: []ProcStats{ts, rs}, Loss: nan(), Spread: r.Spread()}
	switch m {
	case metricPPS:
		smp.Value = Num(Ratio(float64(r.Delivered()), r.RecvSeconds))
	default:
		smp.Value = Num(r.RecvBitsPerSecond() / 1e9)
	}
	if m != metricGbps {
		smp.Loss = Num(Ratio(float64(r.LostPackets), float64(r.Packets)))
	}
	return smp
}

// manyClients runs one blast server in B and n blast clients with one
// stream each in A at once; the value is the sum of their rates.
func manyClients(label string, n int) Side {
	return Side{Label: label, Run: func(ctx context.Context, e *Env) Sample {
		srvArgv := []string{e.Blast, "server", "-p", strconv.Itoa(iperfPort), "--max-clients", strconv.Itoa(n)}
		srv, err := startProc(e.Lab.B, "receiver", srvArgv)
		if err != nil {
			return failed(err)
		}
		defer srv.kill(syscall.SIGKILL)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = netlab.WaitPort(wctx, srv.pid(), "tcp", iperfPort)
		cancel()
		if err != nil {
			return failed(err, srv)
		}
		cliArgv := []string{e.Blast, "client", e.target(), "-p", strconv.Itoa(iperfPort), "-J", "-t", strconv.Itoa(e.Secs)}
		clis := make([]*proc, 0, n)
		for range n {
			c, err := startProc(e.Lab.A, "sender", cliArgv)
			if err != nil {
				return failed(err, append(clis, srv)...)
			}
			clis = append(clis, c)
		}
		var errs []error
		for _, c := range clis {
			errs = append(errs, c.wait(ctx, e.timeout()))
		}
		srv.stop()
		if err := firstErr(errs...); err != nil {
			return failed(err, append(clis, srv)...)
		}
		sum := ProcStats{Role: "sender", Argv: append(cliArgv[:len(cliArgv):len(cliArgv)], fmt.Sprintf("(x%d)", n))}
		var bps float64
		var sent, recv int64
		for _, c := range clis {
			r, err := ParseIperf3([]byte(c.stdout.String()))
			if err != nil {
				return failed(err, append(clis, srv)...)
			}
			bps += r.RecvBitsPerSecond()
			sent += r.SentBytes
			recv += r.RecvBytes
			st := c.stats()
			sum.UserSec += st.UserSec
			sum.SysSec += st.SysSec
			sum.WallSec = max(sum.WallSec, st.WallSec)
			sum.MaxRSSKB = max(sum.MaxRSSKB, st.MaxRSSKB)
		}
		sum.setBytes(sent)
		rs := srv.stats()
		rs.setBytes(recv)
		return Sample{Value: Num(bps / 1e9), Loss: nan(), Procs: []ProcStats{sum, rs}}
	}}
}

// Workloads is the suite, in the order it runs. Every throughput
// workload against iperf3 runs Debian's iperf3 and, when there is one,
// a modern iperf3 (3.16 or later) as a second peer.
func Workloads() []Workload {
	const tcpLen = 128 << 10
	var ws []Workload

	tcp1 := ttcpSpec{id: "tcp1", bufLen: tcpLen, rxBackend: "readwrite", txBackend: "readwrite"}
	ws = append(ws, Workload{
		ID: "tcp1", Title: "TCP, 1 stream, ttcp mode vs iperf3 -P 1, 128 KiB writes", Metric: "throughput", Unit: "Gbit/s", Quick: true,
		Calibrate: tcp1.calibrate,
		Blast:     tcp1.side("blast -t/-r (readwrite)"),
		Peers:     iperfSides("iperf3 -P 1 -l 128K", metricGbps, []string{"-P", "1", "-l", "128K"}),
	})
	for _, b := range []string{"sendfile", "splice"} {
		s := ttcpSpec{id: "tcp1-" + b, bufLen: tcpLen, txBackend: b, rxBackend: "readwrite"}
		ws = append(ws, Workload{
			ID: s.id, Title: "TCP, 1 stream, " + b + " sender vs iperf3 -Z", Metric: "throughput", Unit: "Gbit/s", Quick: b == "sendfile",
			Unavailable: needBackend(b),
			Calibrate:   s.calibrate,
			Blast:       s.side("blast -t --backend " + b),
			Peers:       iperfSides("iperf3 -Z -l 128K", metricGbps, []string{"-Z", "-l", "128K"}),
		})
	}
	for _, p := range []int{1, 2, 4, 8} {
		ps := strconv.Itoa(p)
		ws = append(ws, Workload{
			ID: "client-P" + ps, Title: "TCP, client/server mode, " + ps + " stream(s)", Metric: "throughput", Unit: "Gbit/s",
			Quick:       p == 1 || p == 8,
			Unavailable: needClient,
			Blast:       blastClientSide("blast client -P "+ps+" -> blast server", []string{"-P", ps}),
			Peers:       iperfSides("iperf3 -c -P "+ps+" -> iperf3 -s", metricGbps, []string{"-P", ps}),
		})
	}
	// The engine's designs side by side: free flows (engine v3's raw
	// calls, BLAST_THREADS=free) against locked threads (the default),
	// both ends alike.
	for _, p := range []int{1, 4, 8} {
		ps := strconv.Itoa(p)
		ws = append(ws, Workload{
			ID: "design-P" + ps, Title: "TCP, client/server mode, " + ps + " stream(s): free flows vs locked threads", Metric: "throughput", Unit: "Gbit/s",
			Unavailable: needClient,
			Blast:       threadsClientSide("blast", "free", "blast client -P "+ps+" -> blast server (free flows)", []string{"-P", ps}),
			Peers:       []Side{threadsClientSide("blast-locked", "locked", "blast client -P "+ps+" -> blast server (locked threads)", []string{"-P", ps})},
		})
	}
	ws = append(ws, Workload{
		ID: "server-8clients", Title: "blast server: 8 clients at once vs 1 client -P 8", Metric: "aggregate throughput", Unit: "Gbit/s",
		Quick:       true,
		Unavailable: needClient,
		Blast:       manyClients("8 x blast client -> blast server", 8),
		Peers:       []Side{blastClientSide("blast client -P 8 -> blast server", []string{"-P", "8"})},
	})
	// UDP in client/server mode: blast's default backends (mmsg with
	// GSO/GRO) against iperf3 without and with --gsro, and a paced run.
	udp64 := []string{"-u", "-b", "0", "-l", "64"}
	gsro := iperfSide(PeerIperf3Modern, "iperf3 --gsro -c -u -b 0 -l 64 -> iperf3 -s", metricPPS, append([]string{"--gsro"}, udp64...))
	gsro.Unavailable = needGSRO
	paced := []string{"-u", "-b", "1G", "-l", "1400"}
	ws = append(ws,
		Workload{ID: "client-udp64", Title: "UDP, client/server, 64-byte datagrams, unlimited", Metric: "delivered datagrams/s", Unit: "pps", UDP: true,
			Quick: true, Unavailable: needClient,
			Blast: blastClientMetric("blast client -u -b 0 -l 64 -> blast server", metricPPS, udp64),
			Peers: iperfSides("iperf3 -c -u -b 0 -l 64 -> iperf3 -s", metricPPS, udp64)},
		Workload{ID: "client-udp64-gsro", Title: "UDP, client/server, 64-byte datagrams, unlimited, vs iperf3 --gsro", Metric: "delivered datagrams/s", Unit: "pps", UDP: true,
			Unavailable: needClient,
			Blast:       blastClientMetric("blast client -u -b 0 -l 64 -> blast server", metricPPS, udp64),
			Peers:       []Side{iperfSide(PeerIperf3, "iperf3 -c -u -b 0 -l 64 -> iperf3 -s (3.12 has no --gsro)", metricPPS, udp64), gsro}},
		Workload{ID: "client-udp1400-1G", Title: "UDP, client/server, 1400-byte datagrams paced at 1 Gbit/s", Metric: "received rate", Unit: "Gbit/s", UDP: true,
			Unavailable: needClient,
			Blast:       blastClientMetric("blast client -u -b 1G -l 1400 -> blast server", metricUDPGbps, paced),
			Peers:       iperfSides("iperf3 -c -u -b 1G -l 1400 -> iperf3 -s", metricUDPGbps, paced)},
	)
	for _, l := range []int{64, 1400} {
		ls := strconv.Itoa(l)
		for _, gso := range []bool{false, true} {
			s := ttcpSpec{id: "udp" + ls, udp: true, bufLen: l, txBackend: "mmsg", rxBackend: "mmsg"}
			title := "UDP, " + ls + "-byte datagrams, mmsg"
			label := "blast -u --backend mmsg"
			flags := []string{"-u", "-b", "0", "-l", ls}
			peers := iperfSides("iperf3 -u -b 0 -l "+ls, metricPPS, flags)
			if gso {
				s.id += "-gso"
				s.txOpt, s.rxOpt = "gso", "gro"
				title += " with GSO/GRO vs iperf3 --gsro"
				label += " (gso / gro)"
				// Debian's iperf3 (3.12) has no --gsro; the modern one
				// runs with it when it has it.
				modern := iperfSide(PeerIperf3Modern, "iperf3 --gsro -u -b 0 -l "+ls, metricPPS, append([]string{"--gsro"}, flags...))
				modern.Unavailable = needGSRO
				peers[1] = modern
			} else {
				title += ", no GSO/GRO"
			}
			ws = append(ws, Workload{
				ID: s.id, Title: title, Metric: "delivered datagrams/s", Unit: "pps", UDP: true,
				Quick:       l == 64,
				Extra:       l != 64, // no target; keeps make bench under 15 minutes
				Unavailable: needOptions(gso),
				Calibrate:   s.calibrate,
				Blast:       s.side(label),
				Peers:       peers,
			})
		}
	}
	ws = append(ws, latencyWorkloads()...)
	ws = append(ws,
		Workload{ID: "afxdp-tx", Title: "AF_XDP transmit, 64-byte frames, vs trafgen", Metric: "frames/s received by B", Unit: "pps", UDP: true,
			Quick: true, Unavailable: needAFXDP, Calibrate: afxdpCalibrate, Blast: afxdpTxSide(), Peers: []Side{trafgenSide()}},
		Workload{ID: "afxdp-rx", Title: "AF_XDP receive from trafgen at its full rate, vs a socket receiver", Metric: "received datagrams/s", Unit: "pps", UDP: true,
			Quick: true, Unavailable: needAFXDP,
			Blast: trafgenRx("trafgen -> blast -r -u --backend afxdp", "afxdp"),
			Peers: []Side{trafgenRx("trafgen -> blast -r -u --backend mmsg", "mmsg")}},
	)
	return ws
}

func needBackend(name string) func(e *Env) string {
	return func(e *Env) string {
		if !e.Caps.Backends[name] {
			return "blast has no usable --backend " + name + " here ('blast backends')"
		}
		return ""
	}
}

func needClient(e *Env) string {
	if !e.Caps.Client {
		return "not implemented: blast has no client/server mode yet"
	}
	return ""
}

func needOptions(gso bool) func(e *Env) string {
	return func(e *Env) string {
		if r := needBackend("mmsg")(e); r != "" {
			return r
		}
		if gso && e.Caps.OptionArgs == nil {
			return "not available: blast ttcp mode takes no backend options (gso, gro) yet"
		}
		return ""
	}
}

func needLatency(e *Env) string {
	if !e.Caps.Latency {
		return "not implemented: blast has no latency mode (blast lat) yet"
	}
	return ""
}

func needAFXDP(e *Env) string {
	if !e.Caps.Backends["afxdp"] {
		return "not implemented: blast has no usable --backend afxdp yet"
	}
	return ""
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
