package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/blastnet/blast/netlab"
)

// afxdpPayload makes 60-byte frames (64 on the wire with the FCS):
// 14 Ethernet + 20 IPv4 + 8 UDP + 18.
const afxdpPayload = 18

// ifaceCounter reads one statistics counter of h's lab interface.
func ifaceCounter(ctx context.Context, h *netlab.Host, name string) (int64, error) {
	out, err := h.Command("cat", "/sys/class/net/"+h.Iface+"/statistics/"+name).Output()
	if err != nil {
		return 0, fmt.Errorf("read %s of %s: %w", name, h.Iface, err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
}

// sinkMAC is the destination MAC of the transmit workload's frames: not
// B's, so B's stack drops them on arrival (PACKET_OTHERHOST) and the
// sender is what is measured, not B's UDP stack.
const sinkMAC = "02:bb:00:00:00:01"

// withSinkNeigh runs fn with A's neighbour entry for B pointing at
// sinkMAC (blast's AF_XDP sender takes the MAC from that table; trafgen
// is given it), and removes the entry afterwards so the other workloads
// resolve B again.
func withSinkNeigh(e *Env, fn func() Sample) Sample {
	a := e.Lab.A
	set := a.Command("ip", "neigh", "replace", e.Lab.B.Addr4.String(), "lladdr", sinkMAC, "dev", a.Iface, "nud", "permanent")
	if out, err := set.CombinedOutput(); err != nil {
		return failed(fmt.Errorf("ip neigh replace: %w: %s", err, out))
	}
	defer a.Command("ip", "neigh", "del", e.Lab.B.Addr4.String(), "dev", a.Iface).Run()
	return fn()
}

// afxdpTx is blast's AF_XDP transmitter in A sending 64-byte frames to
// B's address (at sinkMAC): B's interface counts what arrives.
var afxdpTx = ttcpSpec{id: "afxdp-tx", udp: true, bufLen: afxdpPayload, txBackend: "afxdp"}

// afxdpTxSide runs only the sender; the value is the frames B's interface
// received per second of blast's transmit time.
func afxdpTxSide() Side {
	return Side{Label: "blast -t -u -l 18 --backend afxdp", Run: func(ctx context.Context, e *Env) Sample {
		smp, _ := afxdpTxRun(ctx, e, e.counts[afxdpTx.id])
		return smp
	}}
}

func afxdpTxRun(ctx context.Context, e *Env, n int64) (smp Sample, tr TTCPResult) {
	smp = withSinkNeigh(e, func() Sample {
		smp, tr = afxdpTxSend(ctx, e, n)
		return smp
	})
	return smp, tr
}

func afxdpTxSend(ctx context.Context, e *Env, n int64) (Sample, TTCPResult) {
	_, txArgv := afxdpTx.argv(e, n)
	rx0, err := ifaceCounter(ctx, e.Lab.B, "rx_packets")
	if err != nil {
		return failed(err), TTCPResult{}
	}
	tx, err := startProc(e.Lab.A, "sender", txArgv)
	if err != nil {
		return failed(err), TTCPResult{}
	}
	if err := tx.wait(ctx, e.timeout()); err != nil {
		return failed(err, tx), TTCPResult{}
	}
	rx1, err := ifaceCounter(ctx, e.Lab.B, "rx_packets")
	if err != nil {
		return failed(err, tx), TTCPResult{}
	}
	tr, err := ParseTTCP(tx.stdout.String())
	if err != nil {
		return failed(err, tx), tr
	}
	ts := tx.stats()
	ts.setBytes(tr.Bytes)
	return Sample{Value: Num(Ratio(float64(rx1-rx0), tr.Seconds)), Loss: nan(), Procs: []ProcStats{ts}}, tr
}

func afxdpCalibrate(ctx context.Context, e *Env) error {
	n := int64(200_000)
	for range 4 {
		smp, tr := afxdpTxRun(ctx, e, n)
		if smp.Err != "" {
			return fmt.Errorf("calibration run: %s", smp.Err)
		}
		if tr.Seconds >= 0.25 {
			e.counts[afxdpTx.id] = max(1000, int64(float64(n)/tr.Seconds*float64(e.Secs)))
			return nil
		}
		n *= 8
	}
	return fmt.Errorf("calibration: runs stay too short to time")
}

// trafgenSide sends the same frames (sinkMAC, UDP to port 5001) with
// trafgen from A for the run's seconds; the value is what B's interface
// received per second.
func trafgenSide() Side {
	return Side{Key: "trafgen", Label: "trafgen (netsniff-ng), same frames", Tool: "trafgen", Run: func(ctx context.Context, e *Env) Sample {
		return withSinkNeigh(e, func() Sample { return trafgenRun(ctx, e, sinkMAC) })
	}}
}

// trafgenRun sends 64-byte frames to mac for the run's seconds.
func trafgenRun(ctx context.Context, e *Env, mac string) Sample {
	cfg := fmt.Sprintf("{ eth(da=%s), ipv4(saddr=%s, daddr=%s), udp(sp=40000, dp=%d), fill(0x41, %d) }\n",
		mac, e.Lab.A.Addr4, e.Lab.B.Addr4, ttcpPort, afxdpPayload)
	rx0, err := ifaceCounter(ctx, e.Lab.B, "rx_packets")
	if err != nil {
		return failed(err)
	}
	argv := []string{"timeout", "-s", "INT", strconv.Itoa(e.Secs), "trafgen", "--dev", e.Lab.A.Iface,
		"--conf", "/dev/stdin", "-q", "--no-sock-mem"}
	p := &proc{role: "sender", argv: argv, done: make(chan struct{})}
	p.cmd = e.Lab.A.Command(argv[0], argv[1:]...)
	p.cmd.Stdin = strings.NewReader(cfg)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		return failed(err)
	}
	go func() { p.err = p.cmd.Wait(); p.wall = time.Since(p.start); close(p.done) }()
	err = p.wait(ctx, e.timeout())
	if err != nil && !strings.Contains(err.Error(), "exit status 124") && !strings.Contains(err.Error(), "exit status 130") {
		return failed(err, p)
	}
	rx1, err := ifaceCounter(ctx, e.Lab.B, "rx_packets")
	if err != nil {
		return failed(err, p)
	}
	st := p.stats()
	st.setBytes((rx1 - rx0) * (14 + 20 + 8 + afxdpPayload))
	return Sample{Value: Num(Ratio(float64(rx1-rx0), st.WallSec)), Loss: nan(), Procs: []ProcStats{st}}
}

// trafgenRx runs a blast receiver in B (backend rxBackend) while trafgen
// in A sends 64-byte frames to B's own MAC at its full rate for the run's
// seconds, then interrupts the receiver, which reports what it got. The
// value is datagrams received per second; loss is what B's interface
// received but the application did not.
func trafgenRx(label, rxBackend string) Side {
	return Side{Key: "blast", Label: label, Tool: "trafgen", Run: func(ctx context.Context, e *Env) Sample {
		out, err := e.Lab.B.Command("cat", "/sys/class/net/"+e.Lab.B.Iface+"/address").Output()
		if err != nil {
			return failed(fmt.Errorf("B's MAC: %w", err))
		}
		mac := strings.TrimSpace(string(out))
		rxArgv := []string{e.Blast, "-r", "-s", "-u", "-l", strconv.Itoa(afxdpPayload), "-p", strconv.Itoa(ttcpPort), "--backend", rxBackend}
		rx, err := startProc(e.Lab.B, "receiver", rxArgv)
		if err != nil {
			return failed(err)
		}
		defer rx.kill(syscall.SIGKILL)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = netlab.WaitPort(wctx, rx.pid(), "udp", ttcpPort)
		cancel()
		if err != nil {
			return failed(err, rx)
		}
		time.Sleep(200 * time.Millisecond) // the XDP program and the fill ring
		rx0, err := ifaceCounter(ctx, e.Lab.B, "rx_packets")
		if err != nil {
			return failed(err, rx)
		}
		tg := trafgenRun(ctx, e, mac)
		rx1, err := ifaceCounter(ctx, e.Lab.B, "rx_packets")
		if err != nil {
			return failed(err, rx)
		}
		time.Sleep(100 * time.Millisecond)
		rx.kill(syscall.SIGINT)
		if err := rx.wait(ctx, 5*time.Second); err != nil && !strings.Contains(err.Error(), "exit status") {
			return failed(err, rx)
		}
		if tg.Err != "" {
			return failed(fmt.Errorf("trafgen: %s", tg.Err), rx)
		}
		rr, err := ParseTTCP(rx.stdout.String())
		if err != nil {
			return failed(err, rx)
		}
		rs := rx.stats()
		rs.setBytes(rr.Bytes)
		procs := append([]ProcStats{rs}, tg.Procs...)
		arrived := rx1 - rx0
		return Sample{Value: Num(Ratio(float64(rr.Datagrams), rr.Seconds)),
			Loss: Num(1 - Ratio(float64(rr.Datagrams), float64(arrived))), Procs: procs}
	}}
}
