package control

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/blastnet/blast/internal/testkit"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/netlab"
	"github.com/blastnet/blast/internal/netlab/labtest"
)

// Pacing holds the rate over every 10 ms of a flow, from 1 Mbit/s to
// 1 Gbit/s, with the backends a client or server sends UDP with. The
// measure is the send time each datagram carries in its iperf3 header,
// read by a plain socket at the far end of a veth pair: for every
// datagram, the bytes sent in the 10 ms that start with it must be
// within 10% of the rate's (the window that holds the first and last
// datagrams excepted, as they are cut by the start and the end).
func TestPacingEvery10ms(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	for _, tc := range []struct {
		backend string
		rate    float64
		blk     int
	}{
		{"readwrite", 1e6, 32},
		{"readwrite", 10e6, 256},
		{"readwrite", 100e6, 1400},
		{"readwrite", 1e9, 1400},
		{"mmsg", 1e6, 32},
		{"mmsg", 100e6, 1400},
		{"mmsg:gso", 1e9, 1400},
	} {
		t.Run(fmt.Sprintf("%s/%gM", tc.backend, tc.rate/1e6), func(t *testing.T) {
			name, opts, _ := cutOpts(tc.backend)
			b, _, err := engine.Open(name, opts)
			if err != nil {
				t.Fatal(err)
			}
			// This machine is shared: a stall of the whole VM breaks a
			// window whatever the pacer does. A pacer that bursts fails
			// every attempt; up to five attempts tell that from a stall
			// (and from a run whose datagrams the lab did not all
			// deliver, seen once in a while on this VM right after other
			// lab tests).
			//
			// An attempt whose judged windows all hold the rate, but in
			// which stalls left too few windows to judge, is weighed
			// against the host: a plain sender (naiveStalls) that sleeps
			// until each datagram is due and sends it over the same lab,
			// for as long as the flow. If it stalls at least half as
			// often as the pacer's thread did, the host holds threads
			// up, not the pacer (seen on this VM: sleeps of 256 µs
			// taking 5 to 20 ms, several times in half a second, on an
			// idle machine), and the attempt decides nothing; nor does
			// one whose datagrams the lab lost. The test fails when a
			// judged window is off by more than 10% (a burst), or when
			// at least three attempts sent a datagram more than 1 ms
			// ahead of the pacer's schedule (a burst that the stalls
			// hid) or stalled more than twice as often as the plain
			// sender (an oversleeping pacer). A faulty pacer does so in
			// every attempt, and this test's model of the schedule can
			// be off once: a thread held up between the pacer's clock
			// reading and the datagram's stamp moves the model's
			// schedule by the hold-up, paid back at 25% over the rate. Every
			// case failed with a pacer 15% fast and with one that sends
			// 64 datagrams at once, in a bad spell of this VM too; with
			// one that sleeps 2 ms too long every 16 datagrams, every
			// case failed on a quieter host, and 3 of 7 in a bad spell
			// (the others skipped). Otherwise it skips, with the figures.
			var worst []string
			burst, faulty := false, 0
			const flow = 500 * time.Millisecond
			for attempt := 1; attempt <= 5; attempt++ {
				// The VM's busy spells last a second or two: spread the
				// attempts out.
				time.Sleep(time.Duration(attempt-1) * 500 * time.Millisecond)
				stamps, began, err := paceOnLab(t, lab, b, tc.rate, tc.blk, flow)
				if err != nil {
					worst = append(worst, err.Error()+" (inconclusive)")
					continue
				}
				w := checkWindows(t, stamps, began, tc.rate, tc.blk)
				switch {
				case w.msg == "":
					return
				case w.ahead:
					faulty++
				case !w.tooFewJudged:
					burst = true
				default:
					// The host's stalls come in spells: the more of
					// two measures.
					period := time.Duration(float64(tc.blk) * 8 / tc.rate * float64(time.Second))
					host := naiveStalls(t, lab, period, tc.blk, w.gap, flow)
					if 2*host < w.stalls {
						host = max(host, naiveStalls(t, lab, period, tc.blk, w.gap, flow))
					}
					verdict := "inconclusive"
					if 2*host < w.stalls {
						faulty++
						verdict = "the pacer's own"
					}
					w.msg += fmt.Sprintf(" (%s: a plain sender that sleeps until each datagram is due, every %v, stalled %d times in %v)", verdict, period, host, flow)
				}
				worst = append(worst, w.msg)
			}
			if !burst && faulty < 3 {
				t.Skipf("this host wakes sleeping threads too late, too often, to judge 10 ms windows:\n%s", strings.Join(worst, "\n"))
			}
			t.Errorf("five attempts, none with every 10 ms window within 10%% of the rate:\n%s", strings.Join(worst, "\n"))
		})
	}
}

func cutOpts(s string) (string, string, bool) {
	for i := range s {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// labSockets opens a UDP socket on B and one on A connected to it.
func labSockets(t *testing.T, lab *netlab.Lab) (rx, tx *engine.Socket) {
	t.Helper()
	ctx := context.Background()
	port := testkit.FreePort(t)
	addr := net.JoinHostPort(lab.B.Addr4.String(), strconv.Itoa(port))
	if err := lab.B.Do(func() (err error) {
		rx, err = engine.ListenUDP(ctx, "udp4", addr, engine.SockOpts{RcvBuf: 32 << 20, ForceBuf: true, TOS: engine.NoTOS})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := lab.A.Do(func() (err error) {
		tx, err = engine.Dial(ctx, "udp4", addr, engine.SockOpts{SndBuf: 4 << 20, TOS: engine.NoTOS})
		return err
	}); err != nil {
		rx.Close()
		t.Fatal(err)
	}
	return rx, tx
}

// paceOnLab sends a paced, framed UDP flow from A to B for d and returns
// the send stamp of every datagram, in the order sent, and the time
// (on the stamps' clock, engine.Mono) before the sender began: its
// pacing schedule starts at that time or just after.
func paceOnLab(t *testing.T, lab *netlab.Lab, b engine.Backend, rate float64, blk int, d time.Duration) ([]time.Duration, time.Duration, error) {
	t.Helper()
	rx, tx := labSockets(t, lab)
	defer rx.Close()
	defer tx.Close()

	// The reader keeps every stamp in a slice made before the flow starts,
	// so that it does not make the collector run while the sender paces.
	// It keeps each datagram's sequence number too: a veth pair can hand
	// datagrams over out of order (the sender's thread moved to the other
	// CPU while the first one's backlog waited, 25 ms in a CI run), and
	// the windows are of send times, in the order they were sent.
	type stamp struct {
		seq uint32
		at  time.Duration
	}
	got := make(chan []stamp, 1)
	rx.SetTimeout(300 * time.Millisecond)
	expect := int(rate/8/float64(blk)*d.Seconds()) + 1000
	go func() {
		stamps := make([]stamp, 0, 2*expect)
		buf := make([]byte, 65536)
		for {
			n, err := rx.Read(buf)
			if err != nil {
				break // the flow is over: nothing for 300 ms
			}
			if n >= 12 {
				at := time.Duration(binary.BigEndian.Uint32(buf[0:]))*time.Second + time.Duration(binary.BigEndian.Uint32(buf[4:]))*time.Microsecond
				stamps = append(stamps, stamp{binary.BigEndian.Uint32(buf[8:]), at})
			}
		}
		got <- stamps
	}()
	spec := &engine.Spec{Protocol: engine.UDP, BufLen: blk, Rate: rate, Duration: d, Framing: newUDPFraming(false)}
	f := &engine.Flow{Sock: tx, Spec: spec, Stats: &engine.Counters{}}
	began := engine.Mono().Truncate(time.Microsecond) // the stamps' resolution
	if err := engine.Run(context.Background(), b, f, true); err != nil && !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("send: %v", err)
	}
	received := <-got
	sent := f.Stats.Snapshot().Datagrams
	// Datagram k (from 1) goes to stamps[k-1]; every one must come once.
	stamps := make([]time.Duration, sent)
	have := make([]bool, sent)
	seen, reordered := int64(0), 0
	for i, r := range received {
		if r.seq < 1 || int64(r.seq) > sent || have[r.seq-1] {
			seen = -1 // a number never sent, or one twice
			break
		}
		if i > 0 && r.seq < received[i-1].seq {
			reordered++
		}
		stamps[r.seq-1], have[r.seq-1] = r.at, true
		seen++
	}
	if seen != sent {
		var snmp []byte
		lab.B.Do(func() error { snmp, _ = os.ReadFile("/proc/thread-self/net/snmp"); return nil })
		udp := ""
		for _, l := range strings.Split(string(snmp), "\n") {
			if strings.HasPrefix(l, "Udp:") {
				udp += "; " + l
			}
		}
		return nil, 0, fmt.Errorf("sent %d datagrams from %v to %v, received %d on %v (not each of them once): the lab lost some, the windows would lie%s",
			sent, tx.LocalAddr(), tx.RemoteAddr(), len(received), rx.LocalAddr(), udp)
	}
	if reordered > 0 {
		t.Logf("the lab delivered %d of %d datagrams out of order; the windows are of send order", reordered, sent)
	}
	return stamps, began, nil
}

// The engine's pacer (engine/sender_linux.go): it makes up pacerSlack of
// lateness at once; the schedule moves on by the excess of a longer
// stall, and takes it back (up to pacerMaxDebt) at pacerCatchUp times
// the rate.
const (
	pacerSlack   = 5 * time.Millisecond
	pacerCatchUp = 1.25
	pacerMaxDebt = 100 * time.Millisecond
)

// windowCheck is what checkWindows found: what is wrong ("": no datagram
// sent 1 ms ahead of the schedule, every judged window within 10% of the
// rate's, and enough of them judged); whether it was a datagram ahead, or
// only the stalls (too many windows not judged); the stalls and the gap
// that makes one.
type windowCheck struct {
	msg          string
	tooFewJudged bool
	ahead        bool
	stalls       int
	gap          time.Duration
}

// checkWindows checks the bytes of every 10 ms window that starts at a
// datagram and ends before the last one, for a sender whose schedule
// started at began or just after.
func checkWindows(t *testing.T, stamps []time.Duration, began time.Duration, rate float64, blk int) windowCheck {
	t.Helper()
	const win = 10 * time.Millisecond
	want := rate / 8 * win.Seconds()
	if len(stamps) < 2 || stamps[len(stamps)-1]-stamps[0] < 20*win {
		t.Fatalf("%d datagrams over %v: too few to judge", len(stamps), stamps[len(stamps)-1]-stamps[0])
	}
	// A stall: consecutive send stamps further apart than two datagrams'
	// time and than 300 µs (mmsg sends a paced batch each 250 µs). The
	// pacer sleeps only until the next datagram is due, so such a gap is
	// its thread not running: this VM wakes a sleeping thread late at
	// times, or stalls for a millisecond or two. The windows over a stall
	// say nothing of the pacer and are not judged, as long as they are
	// at most half (at 1 Mbit/s a late wake-up every 40 datagrams puts a
	// gap under a quarter of the windows): a pacer that sends in bursts,
	// or oversleeps, leaves gaps under nearly every window, and fails.
	const maxSkipped = 0.5
	gap := max(300*time.Microsecond, 2*time.Duration(float64(blk)*8/rate*float64(time.Second)))
	type span struct{ from, to time.Duration }
	var stalls []span
	for i := 1; i < len(stamps); i++ {
		if d := stamps[i] - stamps[i-1]; d > gap {
			// The pacer makes up for up to pacerSlack of a stall at
			// once, so that late wakeups do not cost the rate: the
			// datagrams then due leave back to back after it. The
			// windows that hold them are the stall's too.
			stalls = append(stalls, span{stamps[i-1], stamps[i] + min(d, pacerSlack)})
		}
	}
	// Behind: how long after its time on the pacer's schedule each
	// datagram left. The pacer makes up to pacerSlack of lateness at once
	// (its datagrams then leave back to back), moves its schedule on by
	// what is over, and takes that back with every datagram after (at
	// pacerCatchUp times the rate): the schedule here follows the same
	// rules. A window that starts or ends while the sender is behind, or
	// in which it pays a debt back, holds a make-up or a shortfall that
	// the stalls explain, and is not judged. A window the sender starts
	// and ends on time, owing nothing, must hold the rate's bytes, within
	// 10%: a burst ahead of the schedule, or a hole the pacer made, fails
	// it. On time at the start is within onTime of the schedule, as the
	// 10% holds that and one datagram more or less at the ends (2.6% at 1
	// Mbit/s): a window at 1 Mbit/s whose first datagram left 450 µs late
	// held 43 datagrams for 39, +10.1%, its start's make-up and a
	// repayment at 5% (seen here, when the pacer caught up at 1.05 times
	// the rate). At the end, lateness only takes datagrams out, up to
	// gap's worth.
	period := time.Duration(float64(blk) * 8 / rate * float64(time.Second))
	onTime := min(gap, win/50)
	pay := time.Duration((pacerCatchUp - 1) * float64(period))
	behind := make([]time.Duration, len(stamps))
	// paying[k] counts the datagrams before k after which the pacer
	// shortened the wait for the next one, to pay a debt back.
	paying := make([]int, len(stamps)+1)
	// The schedule starts when the sender does, not with its first
	// datagram: a sender whose thread ran late at first catches up (a
	// window that starts there holds 17% over the rate at 1 Gbit/s when
	// the first datagram left 1.7 ms late), and one that bursts at first
	// is ahead of began's schedule. began is a little early (the thread
	// starts after it): the sender seems behind by that, and windows are
	// not judged rather than judged wrong.
	anchor, owed := began, time.Duration(0)
	early, earlyAt := time.Duration(0), 0
	for k, st := range stamps {
		late := st - (anchor + time.Duration(k)*period)
		if late < early {
			early, earlyAt = late, k
		}
		if late > pacerSlack {
			excess := late - pacerSlack
			anchor += excess
			owed = min(owed+excess, pacerMaxDebt)
			late = pacerSlack
		}
		behind[k] = max(late, 0)
		p := min(owed, pay)
		anchor -= p
		owed -= p
		paying[k+1] = paying[k]
		if p > 0 {
			paying[k+1]++
		}
	}
	stalled := func(from, to time.Duration) bool {
		for _, st := range stalls {
			if st.from < to && st.to > from {
				return true
			}
		}
		return false
	}
	last := stamps[len(stamps)-1]
	worst, worstAt, windows, skipped := 0.0, time.Duration(0), 0, 0
	j := 0
	for i, s := range stamps {
		if i == 0 || s+win > last {
			continue
		}
		for j < len(stamps) && stamps[j] < s+win {
			j++
		}
		if stalled(s, s+win) || behind[i] > onTime || behind[j-1] > gap || paying[j-1] > paying[i] {
			skipped++
			continue
		}
		bytes := float64((j - i) * blk)
		if dev := (bytes - want) / want; abs(dev) > abs(worst) {
			worst, worstAt = dev, s-stamps[0]
		}
		windows++
	}
	t.Logf("%d datagrams, %d windows of 10 ms: worst %+.1f%% at %v (%d windows over %d stalls of the sender not judged); earliest %v ahead of the schedule", len(stamps), windows, 100*worst, worstAt, skipped, len(stalls), -early)
	w := windowCheck{stalls: len(stalls), gap: gap}
	switch {
	case -early > win/10:
		w.msg = fmt.Sprintf("datagram %d left %v ahead of the pacer's schedule, more than a tenth of a window", earlyAt+1, -early)
		w.ahead = true
	case abs(worst) > 0.10:
		w.msg = fmt.Sprintf("the 10 ms from %v held %+.1f%% of the rate", worstAt, 100*worst)
	case float64(skipped) > maxSkipped*float64(windows+skipped):
		w.msg = fmt.Sprintf("%d gaps of more than %v between %d datagrams sent lie under %d of %d windows: the pacer sends in bursts or oversleeps", len(stalls), gap, len(stamps), skipped, windows+skipped)
		w.tooFewJudged = true
	}
	return w
}

// naiveStalls is how often this host, with this lab, holds up a thread
// that does what a paced sender does in the plainest way: a locked thread
// (timer slack 1 ns) that sleeps in ppoll until its next datagram is due,
// on a fixed schedule, and writes it from A to a reader on B, for d. It
// counts the sends further apart than gap. The reader's wakeups and the
// kernel's receive work, done in the sender's system call on a veth pair,
// hold that thread up as they hold the pacer's, which a thread that only
// sleeps does not show: on this VM the pacer stalled 2.5 times as often as
// one (33 against 13 in half a second), in 3 attempts of 5.
func naiveStalls(t *testing.T, lab *netlab.Lab, period time.Duration, blk int, gap, d time.Duration) int {
	t.Helper()
	rx, tx := labSockets(t, lab)
	defer tx.Close()
	defer rx.Close()
	rx.SetTimeout(100 * time.Millisecond)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 65536)
		for {
			if _, err := rx.Read(buf); err != nil {
				return
			}
		}
	}()
	n := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		buf := make([]byte, blk)
		stalls := 0
		start := time.Now()
		last := start
		for k := 1; time.Duration(k)*period < d; k++ {
			if wait := time.Until(start.Add(time.Duration(k) * period)); wait > 0 {
				ts := unix.NsecToTimespec(wait.Nanoseconds())
				unix.Ppoll(nil, &ts, nil)
			}
			now := time.Now()
			if now.Sub(last) > gap {
				stalls++
			}
			last = now
			tx.Write(buf)
		}
		n <- stalls
	}()
	stalls := <-n
	<-drained
	return stalls
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
