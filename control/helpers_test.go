package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/testkit"
)

// needIperf3 is the iperf3 to test against: $BLAST_IPERF3 (a build of
// another version, e.g. 3.21 from source), else Debian's on PATH.
func needIperf3(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BLAST_IPERF3"); p != "" {
		return p
	}
	p, err := exec.LookPath("iperf3")
	if err != nil {
		t.Skip("iperf3 is not installed (apt-get install iperf3); interop tests skipped")
	}
	return p
}

// iperfJSON is what the tests read of an iperf3 -J document (either
// program's).
type iperfJSON struct {
	Start struct {
		Connected []struct {
			Socket int `json:"socket"`
		} `json:"connected"`
		TestStart struct {
			Protocol   string `json:"protocol"`
			BlkSize    int    `json:"blksize"`
			NumStreams int    `json:"num_streams"`
			Bytes      int64  `json:"bytes"`
			Reverse    int    `json:"reverse"`
		} `json:"test_start"`
		Cookie string `json:"cookie"`
	} `json:"start"`
	Intervals []struct {
		Streams []struct {
			Bytes  int64 `json:"bytes"`
			Sender bool  `json:"sender"`
		} `json:"streams"`
		Sum *iperfSum `json:"sum"`
	} `json:"intervals"`
	End struct {
		Streams []struct {
			Sender   iperfSum  `json:"sender"`
			Receiver iperfSum  `json:"receiver"`
			UDP      *iperfSum `json:"udp"`
		} `json:"streams"`
		Sum                     *iperfSum `json:"sum"`
		SumSent                 *iperfSum `json:"sum_sent"`
		SumReceived             *iperfSum `json:"sum_received"`
		SumSentBidirReverse     *iperfSum `json:"sum_sent_bidir_reverse"`
		SumReceivedBidirReverse *iperfSum `json:"sum_received_bidir_reverse"`
		CPU                     *struct {
			HostTotal   float64 `json:"host_total"`
			RemoteTotal float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
	} `json:"end"`
	Error            string `json:"error"`
	ServerOutputText string `json:"server_output_text"`
}

type iperfSum struct {
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *int64  `json:"retransmits"`
	Sender        bool    `json:"sender"`
	// UDP
	Packets     int64   `json:"packets"`
	LostPackets int64   `json:"lost_packets"`
	JitterMs    float64 `json:"jitter_ms"`
	OutOfOrder  int64   `json:"out_of_order"`
}

func parseIperfJSON(t *testing.T, b []byte) *iperfJSON {
	t.Helper()
	var d iperfJSON
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("parse -J output: %v\n%s", err, b)
	}
	return &d
}

// iperf3Server runs `iperf3 -s -1 -J` on a free loopback port; wait
// returns its JSON document.
func iperf3Server(t *testing.T) (port int, wait func() *iperfJSON) {
	t.Helper()
	return iperf3ServerBind(t, "127.0.0.1")
}

// iperf3ServerArgs runs `iperf3 -s -1 -J -B bind -p PORT args...`; wait
// returns its raw JSON document.
func iperf3ServerArgs(t *testing.T, bind string, args ...string) (port int, wait func() []byte) {
	t.Helper()
	bin := needIperf3(t)
	port = testkit.FreePort(t)
	var out bytes.Buffer
	cmd := exec.Command(bin, append([]string{"-s", "-1", "-J", "-B", bind, "-p", strconv.Itoa(port)}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitListen(t, port)
	var once sync.Once
	return port, func() []byte {
		once.Do(func() {
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("iperf3 -s did not exit:\n%s", out.Bytes())
			}
		})
		return out.Bytes()
	}
}

func iperf3ServerBind(t *testing.T, bind string) (port int, wait func() *iperfJSON) {
	t.Helper()
	port, raw := iperf3ServerArgs(t, bind)
	return port, func() *iperfJSON { return parseIperfJSON(t, raw()) }
}

// waitListen waits until a socket listens on the loopback port, without
// connecting to it (iperf3 -s -1 would count a probe as its one test).
func waitListen(t *testing.T, port int) {
	t.Helper()
	want := fmt.Sprintf(":%04X ", port)
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("a socket listening on port %d", port), func() bool {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, _ := os.ReadFile(f)
			for _, line := range strings.Split(string(b), "\n") {
				fields := strings.Fields(line)
				if len(fields) > 3 && strings.Contains(fields[1]+" ", want) && fields[3] == "0A" {
					return true
				}
			}
		}
		return false
	})
}

// iperf3Client runs `iperf3 -c 127.0.0.1 -J` with args and returns its
// JSON document.
func iperf3Client(t *testing.T, port int, args ...string) *iperfJSON {
	t.Helper()
	bin := needIperf3(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-J"}, args...)
	out, err := exec.CommandContext(ctx, bin, all...).CombinedOutput()
	d := parseIperfJSON(t, out)
	if err != nil || d.Error != "" {
		t.Fatalf("iperf3 %v: %v: %s", all, err, d.Error)
	}
	return d
}

// iperf3ClientMay runs an iperf3 client that may fail; its JSON says.
func iperf3ClientMay(t *testing.T, port int, args ...string) *iperfJSON {
	t.Helper()
	bin := needIperf3(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-J"}, args...)
	out, _ := exec.CommandContext(ctx, bin, all...).CombinedOutput()
	return parseIperfJSON(t, out)
}

func iperf3ClientRaw(t *testing.T, port int, args ...string) *iperfJSON {
	t.Helper()
	return iperf3Client(t, port, args...)
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// blastServer serves on a free loopback port until the test ends.
func blastServer(t *testing.T, cfg ServerConfig) (*Server, int, *resultLog) {
	t.Helper()
	if cfg.Bind == "" {
		cfg.Bind = "127.0.0.1"
	}
	if cfg.Port == 0 {
		cfg.Port = testkit.FreePort(t)
	}
	rl := &resultLog{}
	prev := cfg.OnResult
	cfg.OnResult = func(r *result.Result) {
		rl.add(r)
		if prev != nil {
			prev(r)
		}
	}
	srv, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	return srv, srv.Addr().(*net.TCPAddr).Port, rl
}

// resultLog collects a server's results.
type resultLog struct {
	mu  sync.Mutex
	res []*result.Result
	ch  chan struct{}
}

func (l *resultLog) add(r *result.Result) {
	l.mu.Lock()
	l.res = append(l.res, r)
	l.mu.Unlock()
}

// wait waits until n results are in.
func (l *resultLog) wait(t *testing.T, n int) []*result.Result {
	t.Helper()
	var r []*result.Result
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("%d results of the server", n), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		r = append([]*result.Result(nil), l.res...)
		return len(r) >= n
	})
	return r
}

// find waits for the result of the test with cookie.
func (l *resultLog) find(t *testing.T, cookie string) *result.Result {
	t.Helper()
	var found *result.Result
	testkit.WaitFor(t, 30*time.Second, "the server's result of the test "+cookie, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, r := range l.res {
			if r.Cookie == cookie {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

// blastJSON renders r with EncodeJSON and parses it back as a foreign
// parser would.
func blastJSON(t *testing.T, r *result.Result) *iperfJSON {
	t.Helper()
	var b bytes.Buffer
	if err := render.EncodeJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	return parseIperfJSON(t, b.Bytes())
}

func runClient(t *testing.T, cfg Config) *result.Result {
	t.Helper()
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return r
}

// sums adds a Result's totals by direction: what went client->server
// (sent, received) and server->client.
type sums struct {
	upSent, upRecv, downSent, downRecv int64
	upStreams, downStreams             int
	// upDrained and downDrained: what the receivers got after a timed
	// test's end (StreamResult.Drained, or the peer's).
	upDrained, downDrained int64
}

func sumsOf(r *result.Result) sums {
	var s sums
	for _, st := range r.Streams {
		sb, _ := st.SentBytes()
		rb, _ := st.ReceivedBytes()
		var dr int64
		if d := st.Drained; !st.Sender && d != nil {
			dr = d.Bytes
		} else if d := st.PeerDrained; st.Sender && d != nil {
			dr = d.Bytes
		}
		if r.Upstream(st.Sender) {
			s.upSent += sb
			s.upRecv += rb
			s.upDrained += dr
			s.upStreams++
		} else {
			s.downSent += sb
			s.downRecv += rb
			s.downDrained += dr
			s.downStreams++
		}
	}
	return s
}
