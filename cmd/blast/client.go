package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/control"
)

func init() {
	register(command{name: "client", summary: "measure against a blast or iperf3 server (iperf3's -c)", run: runClient})
}

const clientExamples = `
Examples:
  blast client 10.0.0.2                 10 s, one stream, client sends
  blast -c 10.0.0.2 -P 4 -t 30 -R       four streams for 30 s, server sends
  blast client 10.0.0.2 --bidir -J      both ways, iperf3's JSON
  blast client 10.0.0.2 -n 1G -w 4M     one GiByte with 4 MiB socket buffers
Works against 'blast server' and any 'iperf3 -s'.
`

func runClient(e *env, args []string) int {
	fs := pflag.NewFlagSet("client", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	host := fs.StringP("client", "c", "", "server to connect to (or give it as the argument)")
	port := fs.IntP("port", "p", control.DefaultPort, "server port")
	secs := fs.IntP("time", "t", 10, "seconds to transmit for")
	bytesStr := fs.StringP("bytes", "n", "", "bytes to transmit instead of -t (K/M/G/T suffixes, 1024-based)")
	blocksStr := fs.StringP("blockcount", "k", "", "blocks (-l each) to transmit instead of -t")
	parallel := fs.IntP("parallel", "P", 1, "parallel streams (1-128)")
	reverse := fs.BoolP("reverse", "R", false, "the server sends, the client receives")
	bidir := fs.Bool("bidir", false, "both send at once")
	interval := fs.Float64P("interval", "i", 1, "seconds between interval reports (0: none)")
	omit := fs.IntP("omit", "O", 0, "seconds at the start to leave out of the results")
	window := fs.StringP("window", "w", "", "socket buffer size on both ends (K/M suffixes)")
	mss := fs.IntP("set-mss", "M", 0, "TCP maximum segment size")
	nodelay := fs.BoolP("no-delay", "N", false, "TCP_NODELAY (blast sets it on every data stream anyway; accepted for iperf3's scripts)")
	cc := fs.StringP("congestion", "C", "", "TCP congestion control algorithm")
	tosStr := fs.StringP("tos", "S", "", "IP TOS byte (0x hex accepted)")
	dscp := fs.String("dscp", "", "DSCP value or name (EF, AF11, CS1...)")
	udp := fs.BoolP("udp", "u", false, "UDP streams, with iperf3's datagram header (loss, jitter, reordering)")
	rateStr := fs.StringP("bitrate", "b", "", "target bitrate per stream, RATE[/BURST] (k/m/g, 1000-based; 0: unlimited; default 1M for UDP, unlimited for TCP)")
	fqRateStr := fs.String("fq-rate", "", "cap each stream in the kernel (SO_MAX_PACING_RATE), bits/s with k/m/g")
	pacingTimer := fs.String("pacing-timer", "", "accepted for iperf3's scripts: blast paces every buffer to its due time, there is no timer to set")
	dontFrag := fs.Bool("dont-fragment", false, "set the IP don't-fragment bit (UDP)")
	udp64 := fs.Bool("udp-counters-64bit", false, "64-bit datagram sequence numbers (UDP)")
	lenStr := fs.StringP("length", "l", "", "bytes per read/write (default 128K for TCP; for UDP the control connection's MSS, as iperf3)")
	zerocopy := fs.BoolP("zerocopy", "Z", false, "send with sendfile (the sendfile backend) on both ends")
	v4 := fs.BoolP("version4", "4", false, "IPv4 only")
	v6 := fs.BoolP("version6", "6", false, "IPv6 only")
	jsonOut := fs.BoolP("json", "J", false, "iperf3's JSON output (with blast additions under \"blast\")")
	title := fs.StringP("title", "T", "", "prefix every output line with this")
	serverOut := fs.Bool("get-server-output", false, "show the server's own report")
	connTimeout := fs.Int("connect-timeout", 0, "milliseconds to wait for the connection (0: the system's)")
	backend := fs.String("backend", "", "how to send, NAME[:OPTIONS] (see 'blast backends'; readwrite by default); the server sends with it too")
	rxBackend := fs.String("rx-backend", "", "how to receive (default: --backend, or readwrite if that only sends)")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast client: %v: run 'blast help client' for the flags\n", err)
		return exitUsage
	}
	if *help {
		fmt.Fprintf(e.stdout, "Usage: blast client HOST [flags]   (or blast -c HOST [flags])\n\n%s%s", fs.FlagUsages(), clientExamples)
		return exitOK
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "blast client: "+format+"\n", a...)
		return exitUsage
	}
	rest := fs.Args()
	switch {
	case *host == "" && len(rest) == 1:
		*host = rest[0]
	case *host == "" && len(rest) == 0:
		return usage("no server given: blast client HOST (or blast -c HOST)")
	case len(rest) > 0:
		return usage("unexpected argument %q: flags go before or after HOST, and only one HOST", rest[0])
	}
	cfg := control.Config{
		Host: *host, Port: *port, Duration: time.Duration(*secs) * time.Second, Parallel: *parallel,
		Reverse: *reverse, Bidir: *bidir, Interval: time.Duration(*interval * float64(time.Second)),
		Omit: time.Duration(*omit) * time.Second, MSS: *mss, NoDelay: *nodelay, Congestion: *cc,
		ZeroCopy: *zerocopy, Title: *title, GetServerOutput: *serverOut,
		ConnectTimeout: time.Duration(*connTimeout) * time.Millisecond,
	}
	// --backend NAME:OPTIONS, as in ttcp mode.
	cfg.Backend, cfg.BackendOptions, _ = strings.Cut(*backend, ":")
	cfg.RxBackend, cfg.RxBackendOptions, _ = strings.Cut(*rxBackend, ":")
	if *secs < 0 {
		return usage("-t %d: must not be negative", *secs)
	}
	var err error
	if *bytesStr != "" {
		if cfg.Bytes, err = control.ParseSize(*bytesStr); err != nil || cfg.Bytes == 0 {
			return usage("-n %q: want a byte count such as 100M or 1G", *bytesStr)
		}
	}
	if *blocksStr != "" {
		if cfg.Blocks, err = control.ParseSize(*blocksStr); err != nil || cfg.Blocks == 0 {
			return usage("-k %q: want a block count such as 1000 or 10K", *blocksStr)
		}
	}
	if (cfg.Bytes > 0 || cfg.Blocks > 0) && fs.Changed("time") {
		return usage("-t with -n or -k: give one end condition")
	}
	if *window != "" {
		w, err := control.ParseSize(*window)
		if err != nil {
			return usage("-w %q: want a size such as 256K or 4M", *window)
		}
		cfg.Window = int(w)
	}
	if *lenStr != "" {
		l, err := control.ParseSize(*lenStr)
		if err != nil || l == 0 || l > 1<<30 {
			return usage("-l %q: want a size such as 128K (TCP) or 1400 (UDP)", *lenStr)
		}
		cfg.BlockLen = int(l)
	}
	cfg.UDP, cfg.DontFragment, cfg.UDP64 = *udp, *dontFrag, *udp64
	if *rateStr != "" {
		if cfg.Rate, cfg.Burst, err = control.ParseRate(*rateStr); err != nil {
			return usage("%v", err)
		}
		cfg.RateSet = true
	}
	if *fqRateStr != "" {
		r, _, err := control.ParseRate(*fqRateStr)
		if err != nil || strings.Contains(*fqRateStr, "/") {
			return usage("--fq-rate %q: want a rate such as 100M or 1G", *fqRateStr)
		}
		cfg.FQRate = int64(r)
	}
	if *pacingTimer != "" {
		if _, err := strconv.ParseUint(strings.TrimRight(*pacingTimer, "kKmMgG"), 10, 32); err != nil {
			return usage("--pacing-timer %q: want microseconds such as 1000", *pacingTimer)
		}
	}
	if *tosStr != "" && *dscp != "" {
		return usage("-S and --dscp both given: choose one")
	}
	if *tosStr != "" {
		if cfg.TOS, err = control.ParseTOS(*tosStr); err != nil {
			return usage("%v", err)
		}
	}
	if *dscp != "" {
		if cfg.TOS, err = control.ParseDSCP(*dscp); err != nil {
			return usage("%v", err)
		}
	}
	switch {
	case *v4 && *v6:
		return usage("-4 and -6 both given: choose one")
	case *v4:
		cfg.Family = "4"
	case *v6:
		cfg.Family = "6"
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return usage("%v", err)
	}

	out := e.stdout
	if *title != "" {
		out = &prefixWriter{w: e.stdout, prefix: *title + ":  ", bol: true}
	}
	if !*jsonOut {
		first := true
		var mu sync.Mutex
		cfg.OnStart = func(r *control.Result) { control.WriteStart(out, r) }
		cfg.OnInterval = func(r *control.Result, iv *control.Interval) {
			mu.Lock()
			defer mu.Unlock()
			control.WriteInterval(out, r, iv, first)
			first = false
		}
	}
	res, err := control.Run(e.ctx, cfg)
	if *jsonOut {
		if res == nil {
			res = &control.Result{Role: "client", Host: cfg.Host, Err: err}
		}
		control.EncodeJSON(e.stdout, res)
	} else if res != nil && len(res.Streams) > 0 {
		control.WriteSummary(out, res)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "blast client: %v\n", err)
		if errors.Is(err, control.ErrBusy) {
			return exitFailure
		}
		return exitFailure
	}
	if !*jsonOut {
		fmt.Fprintf(out, "\niperf Done.\n")
	}
	return exitOK
}

// prefixWriter puts a prefix (iperf3's -T title) at the start of every line.
type prefixWriter struct {
	w      io.Writer
	prefix string
	bol    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if p.bol {
			if _, err := io.WriteString(p.w, p.prefix); err != nil {
				return 0, err
			}
			p.bol = false
		}
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i < len(b) {
			i++
			p.bol = true
		}
		if _, err := p.w.Write(b[:i]); err != nil {
			return 0, err
		}
		b = b[i:]
	}
	return n, nil
}
