package control

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// A UDP count the server sends (-R -n) through a path that loses 1% of
// its frames: the client ends when it has received the count, and the
// server sends until the client says TEST_END, as iperf3's does, so no
// lost datagram leaves either side waiting. A server that stopped at
// exactly the count left iperf3 3.12's client waiting for bytes that
// never came (2 of 20 runs on loopback; here nearly every run loses one),
// and blast's client ending on a second of silence short of its count.

// lossyCount is the count each run moves: about 1,500 datagrams of
// 1,400 bytes, so that a 1% loss takes some from every run.
const lossyCount = 2 << 20

// lossyLab is a delay line that drops 1% of the frames each way and adds
// nothing else.
func lossyLab(t *testing.T) *netlab.Lab {
	return labtest.New(t, netlab.Delayed, netlab.Options{LossPct: 1, Seed: 25})
}

// lossyDataLab drops 1% of the frames of 1400 bytes or more each way (the
// datagrams of -l 1400 are 1442) and none shorter: iperf3's client gives
// up on a UDP stream whose connect reply was lost (iperf_udp_connect
// reads at most 2804 bytes of the server's data before it returns
// "unable to read from stream socket", 3.12 and 3.21 alike), and no
// server can make that good: a second reply would reach it as a data
// datagram. A blast client asks again (TestUDPReanswer).
func lossyDataLab(t *testing.T) *netlab.Lab {
	return labtest.New(t, netlab.Delayed, netlab.Options{LossPct: 1, LossMinBytes: 1400, Seed: 25})
}

// countEnd bounds how long one run may take: 2 MiB at 100 Mbit/s take
// 0.17 s, a lost datagram that hangs a client takes for ever.
const countEnd = 30 * time.Second

func TestLabUDPCountThroughLossIperf3Client(t *testing.T) {
	bin := needIperf3(t)
	lab := lossyDataLab(t)
	port, rl := labServer(t, lab, ServerConfig{Interval: time.Second})
	var lost int64
	for i := range 5 {
		count := []string{"-n", strconv.Itoa(lossyCount)}
		if i%2 == 1 { // a block count ends the same way
			count = []string{"-k", strconv.Itoa((lossyCount + 1399) / 1400)}
		}
		args := append([]string{"-c", lab.B.Addr4.String(), "-p", strconv.Itoa(port), "-J",
			"-u", "-b", "100M", "-l", "1400", "-R"}, count...)
		p := blasttest.Start(t, lab.A, nil, bin, args...)
		if err := p.WaitErr(countEnd); err != nil {
			t.Fatalf("run %d: iperf3 %v: %v (a client that waits for datagrams that were lost)\nstdout: %s\nstderr: %s",
				i, args, err, p.Stdout.String(), p.Stderr.String())
		}
		d := parseIperfJSON(t, p.Stdout.Bytes())
		if d.Error != "" {
			t.Fatalf("run %d: iperf3: %s", i, d.Error)
		}
		if d.End.SumReceived == nil || d.End.SumReceived.Bytes < lossyCount {
			t.Errorf("run %d: iperf3 received %+v of a count of %d", i, d.End.SumReceived, lossyCount)
		}
		s := rl.wait(t, i+1)[i]
		if s.Err != nil {
			t.Fatalf("run %d: server: %v", i, s.Err)
		}
		if sent := sumsOf(s).downSent; sent < lossyCount {
			t.Errorf("run %d: the server sent %d bytes of a count of %d", i, sent, lossyCount)
		}
		if d.End.SumReceived != nil {
			lost += d.End.SumReceived.LostPackets
		}
	}
	if lost == 0 {
		t.Error("no datagram lost in 5 runs through a path that drops 1%: the test tested nothing")
	}
}

func TestLabUDPCountThroughLossBlastClient(t *testing.T) {
	lab := lossyLab(t)
	port, rl := labServer(t, lab, ServerConfig{Interval: time.Second})
	var lost int64
	for i := range 5 {
		r := lossyBlastRun(t, lab, port, fmt.Sprintf("run %d", i))
		s := rl.wait(t, i+1)[i]
		if s.Err != nil {
			t.Fatalf("run %d: server: %v", i, s.Err)
		}
		if sent := sumsOf(s).downSent; sent < lossyCount {
			t.Errorf("run %d: the server sent %d bytes of a count of %d", i, sent, lossyCount)
		}
		lost += checkLossyRun(t, fmt.Sprintf("run %d", i), r)
	}
	if lost == 0 {
		t.Error("no datagram lost in 5 runs through a path that drops 1%: the test tested nothing")
	}
}

// An iperf3 server also sends until TEST_END: blast's client ends on the
// count received.
func TestLabUDPCountThroughLossBlastClientIperf3Server(t *testing.T) {
	bin := needIperf3(t)
	lab := lossyLab(t)
	var lost int64
	for i := range 5 {
		port := testkit.FreePort(t)
		srv := blasttest.Listening(t, lab.B, "tcp", port, bin, "-s", "-1", "-B", lab.B.Addr4.String(), "-p", strconv.Itoa(port))
		r := lossyBlastRun(t, lab, port, fmt.Sprintf("run %d", i))
		lost += checkLossyRun(t, fmt.Sprintf("run %d", i), r)
		if err := srv.WaitErr(countEnd); err != nil {
			t.Fatalf("run %d: iperf3 -s -1: %v\n%s%s", i, err, srv.Stdout.String(), srv.Stderr.String())
		}
	}
	if lost == 0 {
		t.Error("no datagram lost in 5 runs through a path that drops 1%: the test tested nothing")
	}
}

// lossyBlastRun runs a blast client -u -R -n from A to the server on B.
func lossyBlastRun(t *testing.T, lab *netlab.Lab, port int, what string) *result.Result {
	t.Helper()
	cfg := Config{Host: lab.B.Addr4.String(), Port: port, UDP: true, Rate: 100e6, RateSet: true, BlockLen: 1400,
		Bytes: lossyCount, Reverse: true, Interval: time.Second, NoNIC: true}
	ctx, cancel := context.WithTimeout(context.Background(), countEnd)
	defer cancel()
	var r *result.Result
	if err := lab.A.Do(func() (err error) {
		r, err = Run(ctx, cfg)
		return err
	}); err != nil {
		t.Fatalf("%s: client: %v", what, err)
	}
	return r
}

// checkLossyRun checks that a blast client's -R -n run ended on the count
// received, and returns how many datagrams it lost.
func checkLossyRun(t *testing.T, what string, r *result.Result) int64 {
	t.Helper()
	s := sumsOf(r)
	if s.downRecv < lossyCount {
		t.Errorf("%s: received %d bytes of a count of %d: the client ended before the count", what, s.downRecv, lossyCount)
	}
	var lost, after int64
	for _, st := range r.Streams {
		if !st.Sender && st.UDP != nil {
			lost += st.UDP.Lost
			if st.PeerUDP != nil {
				after += max(st.PeerUDP.Packets-st.UDP.Packets, 0)
			}
			if sent, l := r.UDPLoss(st); sent != st.UDP.Packets || l != st.UDP.Lost {
				t.Errorf("%s: stream %d: UDPLoss says %d of %d lost; the receiver lost %d of %d", what, st.ID, l, sent, st.UDP.Lost, st.UDP.Packets)
			}
		}
	}
	// The summary says what the server sent after the count, apart.
	var text strings.Builder
	render.Text{}.WriteSummary(&text, r)
	line := fmt.Sprintf("sent after the receiver had the count, until TEST_END: %d datagrams", after)
	if got := strings.Contains(text.String(), line); got != (after > 0) {
		t.Errorf("%s: the server sent %d datagrams after the count; the summary says:\n%s", what, after, text.String())
	}
	// What the server sent after the count, which the client never
	// read, is no loss on the path.
	if d := r.Direction(false); d != nil && d.Lost != lost {
		t.Errorf("%s: the path diagnosis counts %d datagrams lost of %d; the receiver lost %d", what, d.Lost, d.Sent, lost)
	}
	return lost
}
