// Command blastsoak puts a `blast server` under the hostile loads and
// faults of issues 13 and 25, on loopback, and prints a table: each load, whether
// the server held (a real test beside it ran with every byte counted),
// and the server's memory and file descriptors after it.
//
//	go build -o bin/blast ./cmd/blast && go run ./bench/cmd/blastsoak [-blast bin/blast] [-out bench/results/soak.md]
//
// It takes a few minutes; it is no test (make test has the short
// versions of these loads), it is the record the closing note cites.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/wire"
	_ "github.com/blastnet/blast/engine/backends" // every backend
	"github.com/blastnet/blast/latency"
)

type row struct {
	load   string
	held   string
	lost   string
	rssMiB float64
	fds    int
	took   time.Duration
}

func main() {
	blast := flag.String("blast", "bin/blast", "the blast binary to serve with")
	out := flag.String("out", "", "also write the table to this file")
	flag.Parse()
	// The loads open more connections than a shell's 20,000 descriptors.
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 65536, Max: 65536}); err != nil {
		fmt.Fprintln(os.Stderr, "blastsoak: raise the descriptor limit:", err)
	}
	if err := run(*blast, *out); err != nil {
		fmt.Fprintln(os.Stderr, "blastsoak:", err)
		os.Exit(1)
	}
}

// server is the blast server under test, a process of its own.
type server struct {
	cmd  *exec.Cmd
	port int
	pid  int
	// baseFDs is what the idle server holds.
	baseFDs int
}

func startServer(blast string, args ...string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// 4096 descriptors, so that 20,200 connections would run it out.
	cmd := exec.Command("prlimit", append([]string{"--nofile=4096:4096", blast, "server", "-B", "127.0.0.1", "-p", strconv.Itoa(port), "-i", "0"}, args...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, port: port, pid: cmd.Process.Pid}
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			time.Sleep(100 * time.Millisecond)
			_, s.baseFDs = s.usage()
			return s, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	return nil, errors.New("the server did not listen")
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

func (s *server) alive() bool { return s.cmd.ProcessState == nil && syscall.Kill(s.pid, 0) == nil }

// threads is the server's thread count.
func (s *server) threads() int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// usage reads the server's resident memory and open descriptors.
func (s *server) usage() (float64, int) {
	var rss float64
	if f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.pid)); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				kb, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
				rss = kb / 1024
			}
		}
		f.Close()
	}
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid))
	return rss, len(ents)
}

// realTest runs a byte-count test from 127.0.0.1 and says whether every
// byte the client sent reached the server.
func (s *server) realTest(cfg control.Config) (held, lost string) {
	cfg.Host, cfg.Port = "127.0.0.1", s.port
	if cfg.Bytes == 0 && cfg.Duration == 0 {
		cfg.Bytes = 256 << 20
	}
	r, err := control.Run(context.Background(), cfg)
	if err != nil {
		return "no: " + err.Error(), "-"
	}
	var sent, got int64
	for _, st := range r.Streams {
		b, _ := st.SentBytes()
		g, _ := st.ReceivedBytes()
		sent += b
		got += g
	}
	if sent != got {
		return "yes", fmt.Sprintf("%d of %d bytes", sent-got, sent)
	}
	return "yes", "none"
}

func dial(from string, port int) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	return d.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
}

func run(blast, outPath string) error {
	var rows []row
	measure := func(load string, s *server, f func() (string, string)) {
		start := time.Now()
		held, lost := f()
		if !s.alive() {
			held = "no: the server exited"
		}
		// Sockets the tests closed may take a moment to go.
		rss, fds := s.usage()
		for i := 0; i < 30 && fds > s.baseFDs; i++ {
			time.Sleep(100 * time.Millisecond)
			rss, fds = s.usage()
		}
		r := row{load, held, lost, rss, fds, time.Since(start)}
		fmt.Fprintf(os.Stderr, "%-60s %s, lost %s, %.1f MiB, %d fds, %v\n", load, held, lost, rss, fds, r.took.Round(time.Millisecond))
		rows = append(rows, r)
	}
	s, err := startServer(blast, "--max-clients", "8", "--rcv-timeout", "2000")
	if err != nil {
		return err
	}
	defer s.stop()

	measure("baseline: one 256 MiB test", s, func() (string, string) { return s.realTest(control.Config{}) })

	measure("1000 connect-and-drop cycles beside a real test", s, func() (string, string) {
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range 1000 {
				if c, err := dial("127.0.0.2", s.port); err == nil {
					if i%2 == 1 {
						c.Write([]byte("half a cookie"))
					}
					c.Close()
				}
			}
		})
		held, lost := s.realTest(control.Config{Bytes: 1 << 30})
		wg.Wait()
		return held, lost
	})

	measure("200 idle + 8 cookie-only connections beside a real test", s, func() (string, string) {
		var conns []net.Conn
		for range 200 {
			if c, err := dial("127.0.0.2", s.port); err == nil {
				conns = append(conns, c)
			}
		}
		for range 8 {
			if c, err := dial("127.0.0.3", s.port); err == nil {
				ck := wire.NewCookie()
				c.Write(ck[:])
				conns = append(conns, c)
			}
		}
		held, lost := s.realTest(control.Config{})
		for _, c := range conns {
			c.Close()
		}
		return held, lost
	})

	measure("19,989 idle connections at once (the server has 4096 fds), then a real test", s, func() (string, string) {
		var conns []net.Conn
		for i := range 20200 {
			c, err := dial(fmt.Sprintf("127.1.%d.%d", i/200, 1+i%200), s.port)
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		n := len(conns)
		for _, c := range conns {
			c.Close()
		}
		time.Sleep(500 * time.Millisecond)
		held, lost := s.realTest(control.Config{})
		return fmt.Sprintf("%s (%d connections opened)", held, n), lost
	})

	measure("8 cookie-only connections, --max-clients 8: 8 real tests at once", s, func() (string, string) {
		var conns []net.Conn
		for range 8 {
			if c, err := dial("127.0.0.4", s.port); err == nil {
				ck := wire.NewCookie()
				c.Write(ck[:])
				conns = append(conns, c)
			}
		}
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		return together(s, 8, control.Config{Bytes: 64 << 20})
	})

	measure("-P 4 -l 1M -R with iouring batch=256 (1 GiB of buffers)", s, func() (string, string) {
		_, err := control.Run(context.Background(), control.Config{Host: "127.0.0.1", Port: s.port, Parallel: 4, BlockLen: 1 << 20,
			Reverse: true, Backend: "iouring", BackendOptions: "batch=256", Bytes: 1 << 20})
		if err == nil {
			return "no: the server ran it", "-"
		}
		held, lost := s.realTest(control.Config{})
		return held + " (refused: " + err.Error() + ")", lost
	})

	measure("a 63 MB results JSON", s, func() (string, string) {
		err := rawTest(s.port, map[string]any{"tcp": true, "num": 1 << 20, "parallel": 1}, func(ctrl, data net.Conn) {
			data.Write(make([]byte, 1<<20))
			wire.WriteState(ctrl, wire.TestEnd)
			wire.ReadState(ctrl)
			big := `{"streams":[{"id":1,"bytes":1048576,"pad":"` + strings.Repeat("x", 63<<20) + `"}]}`
			wire.WriteJSON(ctrl, json.RawMessage(big))
		})
		held, lost := s.realTest(control.Config{})
		return fmt.Sprintf("%s (%v)", held, err), lost
	})

	measure("blockcount 7.07e13 (the byte count overflows)", s, func() (string, string) {
		err := rawTest(s.port, map[string]any{"tcp": true, "blockcount": 70_700_000_000_000, "parallel": 1}, nil)
		held, lost := s.realTest(control.Config{})
		return fmt.Sprintf("%s (%v)", held, err), lost
	})

	measure("-n 100G -R, then the client stops reading", s, func() (string, string) {
		start := time.Now()
		err := rawTest(s.port, map[string]any{"tcp": true, "num": 100 << 30, "reverse": true, "parallel": 1}, func(ctrl, data net.Conn) {
			ctrl.SetReadDeadline(time.Now().Add(30 * time.Second))
			wire.ReadState(ctrl) // SERVER_ERROR, once the server gives up
		})
		held, lost := s.realTest(control.Config{})
		return fmt.Sprintf("%s (freed after %v: %v)", held, time.Since(start).Round(100*time.Millisecond), err), lost
	})

	measure("200 tests one after another (TCP, UDP, -R, --bidir)", s, func() (string, string) {
		for i := range 200 {
			cfg := control.Config{Host: "127.0.0.1", Port: s.port, Bytes: 1 << 20}
			switch i % 4 {
			case 1:
				cfg.UDP, cfg.Rate, cfg.RateSet = true, 100e6, true
			case 2:
				cfg.Reverse = true
			case 3:
				cfg.Bidir = true
			}
			if _, err := control.Run(context.Background(), cfg); err != nil {
				return fmt.Sprintf("no: test %d: %v", i+1, err), "-"
			}
		}
		return s.realTest(control.Config{})
	})

	s3, err := startServer(blast)
	if err != nil {
		return err
	}
	measure("320 idle connections from 10 addresses, each redialled when closed, beside 25 real tests", s3, func() (string, string) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for a := range 10 {
			for range 32 {
				wg.Go(func() {
					for ctx.Err() == nil {
						c, err := dial(fmt.Sprintf("127.0.8.%d", a+1), s3.port)
						if err != nil {
							continue
						}
						stop := context.AfterFunc(ctx, func() { c.Close() })
						io.Copy(io.Discard, c) // until the server closes it
						stop()
						c.Close()
					}
				})
			}
		}
		served, lost := 0, "none"
		for range 25 {
			held, l := s3.realTest(control.Config{Bytes: 16 << 20})
			if strings.HasPrefix(held, "yes") {
				served++
			}
			if l != "none" && l != "-" {
				lost = l
			}
		}
		cancel()
		wg.Wait()
		return fmt.Sprintf("%d of 25 served", served), lost
	})
	measure("64 latency clients that send and never read, beside a blast lat run", s3, func() (string, string) {
		var conns []net.Conn
		ended := make(chan struct{}, 64)
		for i := range 64 {
			c, err := dial(fmt.Sprintf("127.0.9.%d", 1+i/16), s3.port)
			if err != nil {
				break
			}
			conns = append(conns, c)
			go func() {
				defer func() { ended <- struct{}{} }()
				c.Write(latency.Hello[:])
				junk := make([]byte, 64<<10)
				for {
					// Blocks once the server's buffers are full; fails
					// once the server has closed the connection.
					if _, err := c.Write(junk); err != nil {
						return
					}
				}
			}()
		}
		start := time.Now()
		time.Sleep(time.Second) // their writes fill the server's socket buffers
		threads := s3.threads()
		cfg := latency.Defaults()
		cfg.Host, cfg.Port, cfg.Count = "127.0.0.1", s3.port, 1000
		r, err := latency.Run(context.Background(), cfg, nil)
		// The server closes each within its write timeout (10 s).
		closed, bound := 0, time.After(30*time.Second)
	wait:
		for range conns {
			select {
			case <-ended:
				closed++
			case <-bound:
				break wait
			}
		}
		after := time.Since(start).Round(100 * time.Millisecond)
		for _, c := range conns {
			c.Close()
		}
		if err != nil {
			return fmt.Sprintf("no: blast lat: %v", err), "-"
		}
		return fmt.Sprintf("yes (blast lat: %d of %d round trips; server threads %d while they wrote; %d of %d closed by the server within %v)",
			r.RoundTrips, cfg.Count, threads, closed, len(conns), after), "none"
	})
	measure("2000 UDP echo requests from a source with no latency session", s3, func() (string, string) {
		u, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.ParseIP("127.0.10.1")}, &net.UDPAddr{IP: net.ParseIP("127.0.0.1"), Port: s3.port})
		if err != nil {
			return "no: " + err.Error(), "-"
		}
		defer u.Close()
		req := make([]byte, 64)
		copy(req, "bLat")
		req[4] = 1 // a request
		for i := range 2000 {
			binary.BigEndian.PutUint64(req[8:], uint64(i))
			u.Write(req)
		}
		u.SetReadDeadline(time.Now().Add(2 * time.Second))
		answered := 0
		buf := make([]byte, 2048)
		for {
			if _, err := u.Read(buf); err != nil {
				break
			}
			answered++
		}
		held, lost := s3.realTest(control.Config{})
		return fmt.Sprintf("%s (%d of 2000 answered)", held, answered), lost
	})
	s3.stop()

	s2, err := startServer(blast)
	if err != nil {
		return err
	}
	measure("13 clients at once against a default server", s2, func() (string, string) {
		return together(s2, 13, control.Config{Parallel: 2, Bytes: 32 << 20})
	})
	s2.stop()

	var b strings.Builder
	fmt.Fprintf(&b, "| load or fault | the server held (a real test ran, every byte counted) | data lost | server RSS after | server fds after |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %.1f MiB | %d |\n", r.load, strings.ReplaceAll(r.held, "|", "/"), r.lost, r.rssMiB, r.fds)
	}
	fmt.Print(b.String())
	if outPath != "" {
		return os.WriteFile(outPath, []byte(b.String()), 0o644)
	}
	return nil
}

// together runs n tests at once from n addresses and says whether all
// ran with every byte counted.
func together(s *server, n int, cfg control.Config) (string, string) {
	var wg sync.WaitGroup
	held := make([]string, n)
	lost := make([]string, n)
	for i := range n {
		wg.Go(func() {
			c := cfg
			c.Bind = netip.MustParseAddr(fmt.Sprintf("127.0.1.%d", i+1))
			held[i], lost[i] = s.realTest(c)
		})
	}
	wg.Wait()
	ok, none := 0, 0
	var bad []string
	for i := range n {
		if held[i] == "yes" {
			ok++
		} else {
			bad = append(bad, held[i])
		}
		if lost[i] == "none" {
			none++
		}
	}
	h := fmt.Sprintf("%d of %d ran", ok, n)
	if len(bad) > 0 {
		h += ": " + bad[0]
	}
	l := "none"
	if none != n {
		l = fmt.Sprintf("in %d tests", n-none)
	}
	return h, l
}

// rawTest walks the server through a test with params as a raw client
// (one TCP stream), then calls then (nil: stop after the parameters).
func rawTest(port int, params map[string]any, then func(ctrl, data net.Conn)) error {
	ctrl, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	defer ctrl.Close()
	ctrl.SetDeadline(time.Now().Add(60 * time.Second))
	ck := wire.NewCookie()
	ctrl.Write(ck[:])
	if st, err := wire.ReadState(ctrl); err != nil || st != wire.ParamExchange {
		return fmt.Errorf("state %v %v", st, err)
	}
	params["client_version"] = "3.12"
	wire.WriteJSON(ctrl, params)
	st, err := wire.ReadState(ctrl)
	if err != nil {
		return err
	}
	if st != wire.CreateStreams {
		var b [8]byte
		io.ReadFull(ctrl, b[:])
		return fmt.Errorf("refused: state %v, iperf3 error %d", st, int32(b[0])<<24|int32(b[1])<<16|int32(b[2])<<8|int32(b[3]))
	}
	data, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	defer data.Close()
	data.Write(ck[:])
	for _, want := range []wire.State{wire.TestStart, wire.TestRunning} {
		if st, err := wire.ReadState(ctrl); err != nil || st != want {
			return fmt.Errorf("state %v %v, want %v", st, err, want)
		}
	}
	if then != nil {
		then(ctrl, data)
	}
	st, err = wire.ReadState(ctrl)
	return fmt.Errorf("then: state %v %v", st, err)
}
