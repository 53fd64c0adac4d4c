package control

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/testkit"
)

// blast client <-> blast server on loopback, flag by flag.

func TestBlastToBlast(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{Interval: time.Second})
	n := 0
	for _, tc := range []struct {
		name     string
		cfg      Config
		streams  int
		up, down int64 // exact bytes each way, when the test has a count
		check    func(t *testing.T, cli, srv *result.Result)
	}{
		{name: "tcp", cfg: Config{Duration: time.Second}, streams: 1},
		{name: "P4", cfg: Config{Duration: time.Second, Parallel: 4}, streams: 4},
		{name: "reverse", cfg: Config{Duration: time.Second, Reverse: true}, streams: 1},
		{name: "bidir P2", cfg: Config{Duration: time.Second, Bidir: true, Parallel: 2}, streams: 4},
		{name: "bytes odd split", cfg: Config{Bytes: 10_000_001, Parallel: 3}, streams: 3, up: 10_000_001},
		{name: "bytes reverse", cfg: Config{Bytes: 7_777_777, Parallel: 2, Reverse: true}, streams: 2, down: 7_777_777},
		{name: "bytes bidir", cfg: Config{Bytes: 5_000_000, Bidir: true}, streams: 2, up: 5_000_000, down: 5_000_000},
		{name: "blocks", cfg: Config{Blocks: 100, BlockLen: 16 << 10}, streams: 1, up: 100 * 16 << 10},
		{name: "window", cfg: Config{Duration: time.Second, Window: 256 << 10}, streams: 1,
			check: func(t *testing.T, cli, srv *result.Result) {
				if cli.SndBufActual < 256<<10 || srv.RcvBufActual < 256<<10 {
					t.Errorf("-w 256K: client SO_SNDBUF %d, server SO_RCVBUF %d", cli.SndBufActual, srv.RcvBufActual)
				}
			}},
		{name: "mss nodelay tos congestion", cfg: Config{Duration: time.Second, MSS: 1200, NoDelay: true, TOS: 0x10, Congestion: "reno"}, streams: 1,
			check: func(t *testing.T, cli, srv *result.Result) {
				if cli.Congestion != "reno" || srv.Congestion != "reno" {
					t.Errorf("congestion: client %q, server %q", cli.Congestion, srv.Congestion)
				}
				if !srv.Params.NoDelay || srv.Params.MSS != 1200 || srv.Params.TOS != 0x10 {
					t.Errorf("server params %+v", srv.Params)
				}
			}},
		{name: "omit", cfg: Config{Duration: time.Second, Omit: time.Second, Interval: 500 * time.Millisecond}, streams: 1,
			check: func(t *testing.T, cli, srv *result.Result) {
				om := 0
				for _, iv := range cli.Intervals {
					if iv.Omitted {
						om++
					}
				}
				if om != 2 || len(cli.Intervals) != 4 {
					t.Errorf("-O 1 -t 1 -i 0.5: %d intervals, %d omitted; want 4, 2", len(cli.Intervals), om)
				}
				if s := cli.Streams[0].Seconds; s < 0.9 || s > 1.5 {
					t.Errorf("measured %v s after a 1 s omit of a 1 s test", s)
				}
			}},
		{name: "zerocopy", cfg: Config{Bytes: 3 << 20, ZeroCopy: true, Bidir: true}, streams: 2, up: 3 << 20, down: 3 << 20,
			check: func(t *testing.T, cli, srv *result.Result) {
				if !strings.Contains(cli.Backend, "sendfile") || !strings.Contains(srv.Backend, "sendfile") {
					t.Errorf("-Z: client backend %q, server %q", cli.Backend, srv.Backend)
				}
				if !strings.Contains(cli.Backend, "receive readwrite") {
					t.Errorf("-Z --bidir: the client should receive with readwrite: %q", cli.Backend)
				}
			}},
		{name: "get server output", cfg: Config{Duration: time.Second, GetServerOutput: true}, streams: 1,
			check: func(t *testing.T, cli, srv *result.Result) {
				if !strings.Contains(cli.ServerOutputText, "receiver") {
					t.Errorf("server output: %q", cli.ServerOutputText)
				}
			}},
		{name: "title no intervals", cfg: Config{Duration: time.Second, Title: "x", Interval: -1}, streams: 1,
			check: func(t *testing.T, cli, srv *result.Result) {
				if len(cli.Intervals) != 0 || srv.Params.Title != "x" {
					t.Errorf("-i 0: %d intervals; title %q", len(cli.Intervals), srv.Params.Title)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Port = port
			if cfg.Interval < 0 {
				cfg.Interval = 0
				cfg.OnInterval = nil
				cfg.Host = "127.0.0.1"
				r, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				n++
				srv := log.wait(t, n)[n-1]
				checkBlastPair(t, r, srv, tc.streams, tc.up, tc.down)
				tc.check(t, r, srv)
				return
			}
			r := runClient(t, cfg)
			n++
			srv := log.wait(t, n)[n-1]
			checkBlastPair(t, r, srv, tc.streams, tc.up, tc.down)
			checkNIC(t, r, srv)
			if tc.check != nil {
				tc.check(t, r, srv)
			}
		})
	}
}

// checkNIC checks that both ends reported the interface and exchanged it.
func checkNIC(t *testing.T, cli, srv *result.Result) {
	t.Helper()
	if cli.NIC == nil || cli.RemoteNIC == nil || srv.RemoteNIC == nil || cli.RemoteNIC.Interface == nil {
		t.Errorf("NIC reports not exchanged: client %v, remote %v; notes %v", cli.NIC != nil, cli.RemoteNIC != nil, cli.Notes)
	}
}

// checkBlastPair checks a blast client's and a blast server's results of
// the same test against each other.
func checkBlastPair(t *testing.T, cli, srv *result.Result, streams int, up, down int64) {
	t.Helper()
	if srv.Err != nil {
		t.Fatalf("server: %v", srv.Err)
	}
	if srv.Cookie != cli.Cookie {
		t.Fatalf("server result is for cookie %s, client's is %s", srv.Cookie, cli.Cookie)
	}
	if len(cli.Streams) != streams || len(srv.Streams) != streams {
		t.Fatalf("streams: client %d, server %d, want %d", len(cli.Streams), len(srv.Streams), streams)
	}
	for i := range cli.Streams {
		c, s := cli.Streams[i], srv.Streams[i]
		if c.ID != wire.StreamID(i) || s.ID != c.ID || c.Sender == s.Sender {
			t.Errorf("stream %d: client id %d sender %v, server id %d sender %v", i, c.ID, c.Sender, s.ID, s.Sender)
		}
		// Each side's own count is the other's peer count, and a blast
		// receiver gets every byte a blast sender wrote.
		if c.PeerBytes != s.Bytes || s.PeerBytes != c.Bytes {
			t.Errorf("stream %d: client %d (peer says %d), server %d (peer says %d)", c.ID, c.Bytes, s.PeerBytes, s.Bytes, c.PeerBytes)
		}
		// A blast receiver gets every byte a blast sender wrote: in the
		// test's time, or after its end (what was on its way when a
		// time-limited test's time was up), reported apart.
		snd, rcv := c, s
		if !c.Sender {
			snd, rcv = s, c
		}
		got := rcv.Bytes
		if rcv.Drained != nil {
			got += rcv.Drained.Bytes
			if rcv.Drained.Bytes <= 0 || rcv.Drained.Seconds < 0 {
				t.Errorf("stream %d: drained %+v", c.ID, *rcv.Drained)
			}
		}
		// A time-limited TCP test's sender counts what was
		// acknowledged: at most what it wrote (IO).
		if (got != snd.IO.Bytes || snd.Bytes > snd.IO.Bytes) && cli.Params.Omit == 0 { // each side ends its own omit period
			t.Errorf("stream %d: sender wrote %d bytes and counts %d; receiver got %d in the test and %d after it", c.ID, snd.IO.Bytes, snd.Bytes, rcv.Bytes, got-rcv.Bytes)
		}
		if c.PeerIO == nil || s.PeerIO == nil {
			t.Errorf("stream %d: blast I/O counters not exchanged", c.ID)
		}
	}
	cs, ss := sumsOf(cli), sumsOf(srv)
	if cs != ss {
		t.Errorf("totals differ: client %+v, server %+v", cs, ss)
	}
	if up > 0 && cs.upSent != up {
		t.Errorf("client->server: %d bytes, want exactly %d", cs.upSent, up)
	}
	if down > 0 && cs.downSent != down {
		t.Errorf("server->client: %d bytes, want exactly %d", cs.downSent, down)
	}
	if cs.upSent+cs.downSent == 0 {
		t.Error("no bytes moved")
	}
	if cli.RemoteBackend == "" || srv.RemoteBackend == "" {
		t.Errorf("backends not exchanged: client sees %q, server sees %q", cli.RemoteBackend, srv.RemoteBackend)
	}
	if cli.CPU.Total <= 0 || cli.RemoteCPU.Total <= 0 {
		t.Errorf("CPU: local %+v remote %+v", cli.CPU, cli.RemoteCPU)
	}
	// Intervals add up to the totals.
	if len(cli.Intervals) > 0 {
		var sum int64
		for _, iv := range cli.Intervals {
			if iv.Omitted {
				continue
			}
			for _, si := range iv.Streams {
				sum += si.Bytes
			}
		}
		var tot int64
		for _, st := range cli.Streams {
			tot += st.Bytes
		}
		if sum != tot {
			t.Errorf("intervals add up to %d bytes, totals to %d", sum, tot)
		}
	}
}

func TestEightClientsAtOnce(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{Interval: 0})
	const clients = 8
	var wg sync.WaitGroup
	results := make([]*result.Result, clients)
	errs := make([]error, clients)
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cfg := Config{Host: "127.0.0.1", Port: port, Bytes: int64(1+i) << 20, Parallel: 1 + i%3, Reverse: i%2 == 1}
			results[i], errs[i] = Run(context.Background(), cfg)
		}(i)
	}
	wg.Wait()
	srvRes := log.wait(t, clients)
	byCookie := map[string]*result.Result{}
	for _, r := range srvRes {
		byCookie[r.Cookie] = r
	}
	for i, r := range results {
		if errs[i] != nil {
			t.Errorf("client %d: %v", i, errs[i])
			continue
		}
		srv := byCookie[r.Cookie]
		if srv == nil {
			t.Errorf("client %d: the server has no result for it", i)
			continue
		}
		var up, down int64
		if i%2 == 1 {
			down = int64(1+i) << 20
		} else {
			up = int64(1+i) << 20
		}
		checkBlastPair(t, r, srv, 1+i%3, up, down)
	}
}

func TestServerBusy(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{MaxClients: 1, Interval: 0})
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		_, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Duration: 3 * time.Second,
			OnStart: func(*result.Result) { close(started) }})
		done <- err
	}()
	// The first test holds the slot from its streams on.
	waitStarted(t, started, done)
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Duration: time.Second}); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("second client: %v, want ErrBusy", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("first client: %v", err)
	}
	if r := log.wait(t, 1)[0]; r.Err != nil {
		t.Errorf("the busy answer disturbed the running test: %v", r.Err)
	}
	// The slot is free again.
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 1 << 20}); err != nil {
		t.Errorf("after the first test: %v", err)
	}
}

// waitStarted waits until a client running in the background has its
// streams connected (started closed), and fails the test if it ended
// first (its error on done) or took over 30 s.
func waitStarted(t *testing.T, started <-chan struct{}, done <-chan error) {
	t.Helper()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the first test ended before it ran: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first test did not start")
	}
}

func TestIperf3ClientBusy(t *testing.T) {
	needIperf3(t)
	_, port, _ := blastServer(t, ServerConfig{MaxClients: 1, Interval: 0})
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		_, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Duration: 3 * time.Second,
			OnStart: func(*result.Result) { close(started) }})
		done <- err
	}()
	waitStarted(t, started, done)
	if d := iperf3ClientMay(t, port, "-t", "1"); !strings.Contains(d.Error, "busy") {
		t.Errorf("iperf3's error: %q, want the server-is-busy message", d.Error)
	}
	if err := <-done; err != nil {
		t.Errorf("the running test: %v", err)
	}
}

func TestServerUnreachable(t *testing.T) {
	port := testkit.FreePort(t)
	_, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "server running") {
		t.Errorf("error %v, want a refused connection that names the fix", err)
	}
}

// A server that goes away mid-test: the client stops, reports what it
// measured, and fails.
func TestServerGoneMidTest(t *testing.T) {
	srv, err := Listen(ServerConfig{Bind: "127.0.0.1", Interval: 0})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx); close(served) }()
	port := srv.Addr().(*net.TCPAddr).Port
	// The server goes once the test has measured an interval; the test
	// would run 60 s: the client ends it when it notices.
	var once sync.Once
	r, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Duration: 60 * time.Second, Interval: 200 * time.Millisecond,
		OnInterval: func(*result.Result, *result.Interval) { once.Do(cancel) }})
	<-served
	if err == nil {
		t.Fatal("the client succeeded although the server went away")
	}
	if r == nil || len(r.Streams) != 1 || r.Streams[0].Bytes == 0 || len(r.Intervals) == 0 {
		t.Fatalf("no partial results: %+v", r)
	}
	if want := "the server has terminated the test"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	t.Logf("client: %v", err)
}

// A client that vanishes mid-test: the server frees the slot and serves
// the next client.
func TestClientGoneMidTest(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{MaxClients: 1, Interval: 0})
	ctx, cancel := context.WithCancel(context.Background())
	// Interrupted once it has measured an interval of its 60 s.
	var once sync.Once
	if _, err := Run(ctx, Config{Host: "127.0.0.1", Port: port, Duration: 60 * time.Second, Interval: 100 * time.Millisecond,
		OnInterval: func(*result.Result, *result.Interval) { once.Do(cancel) }}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted client: %v, want %v", err, ErrInterrupted)
	}
	r := log.wait(t, 1)[0]
	// CLIENT_TERMINATE, or the control connection's end if that is read
	// first: both are the client ending the test.
	if r.Err == nil || (r.Err.Error() != "the client has terminated the test" && r.Err.Error() != "the client is gone (it closed the control connection mid-test)") {
		t.Errorf("server result error: %v", r.Err)
	}
	// And a client that closes its sockets without a word.
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	ck := wire.NewCookie()
	c.Write(ck[:])
	if s, err := wire.ReadState(c); err != nil || s != wire.ParamExchange {
		t.Fatalf("raw client: %v %v", s, err)
	}
	c.Close()
	log.wait(t, 2)
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 1 << 20}); err != nil {
		t.Errorf("next client: %v", err)
	}
}
