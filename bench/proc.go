package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/blastnet/blast/netlab"
)

// ProcStats is the kernel's accounting of one process of a run.
type ProcStats struct {
	Role     string   `json:"role"` // sender, receiver, client, server
	Argv     []string `json:"argv"`
	UserSec  float64  `json:"user_sec"`
	SysSec   float64  `json:"sys_sec"`
	WallSec  float64  `json:"wall_sec"`
	MaxRSSKB int64    `json:"max_rss_kb"`
	// Bytes is what this process sent or received, as the tool reports.
	Bytes    int64 `json:"bytes"`
	CPUPerGB Num   `json:"cpu_sec_per_gb"`
	// Switches are the process's context switches, voluntary plus
	// involuntary (wait4's rusage), and SwitchesPerGB them per 10^9
	// bytes moved: how often the process's threads left a CPU for it.
	Switches      int64 `json:"switches"`
	SwitchesPerGB Num   `json:"switches_per_gb"`
}

// CPUSec is user plus system time.
func (p ProcStats) CPUSec() float64 { return p.UserSec + p.SysSec }

// setBytes records what the process moved and its CPU cost per GB.
func (p *ProcStats) setBytes(b int64) {
	p.Bytes = b
	p.CPUPerGB = Num(CPUPerGB(p.CPUSec(), b))
	p.SwitchesPerGB = Num(CPUPerGB(float64(p.Switches), b))
}

// proc is a command running in a lab host.
type proc struct {
	role   string
	argv   []string
	cmd    *netlab.Cmd
	stdout syncBuf
	stderr syncBuf
	start  time.Time
	wall   time.Duration
	done   chan struct{}
	err    error
}

// syncBuf is a strings.Builder that exec's copying goroutine may write
// while bench reads it after a timeout.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startProc starts argv in h.
func startProc(h *netlab.Host, role string, argv []string) (*proc, error) {
	p := &proc{role: role, argv: argv, done: make(chan struct{})}
	p.cmd = h.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.wall = time.Since(p.start)
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// wait waits for the process to exit by itself, at most timeout; when the
// time is up or ctx ends it kills the process and says so.
func (p *proc) wait(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("%s: %w: %s", p.argv[0], p.err, p.lastWords())
		}
		return nil
	case <-ctx.Done():
		p.kill(syscall.SIGKILL)
		return ctx.Err()
	case <-t.C:
		p.kill(syscall.SIGKILL)
		return fmt.Errorf("%s did not finish within %s: %s", strings.Join(p.argv, " "), timeout, p.lastWords())
	}
}

// stop ends a process that would run on (a server): SIGTERM, then SIGKILL
// after a second.
func (p *proc) stop() {
	p.kill(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Second):
		p.kill(syscall.SIGKILL)
	}
}

func (p *proc) kill(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL {
		<-p.done
	}
}

// lastWords is the end of the process's stderr (or stdout), for errors.
func (p *proc) lastWords() string {
	s := strings.TrimSpace(p.stderr.String())
	if s == "" {
		s = strings.TrimSpace(p.stdout.String())
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 && len(s)-i < 200 {
		// keep the last two lines at most
		if j := strings.LastIndexByte(s[:i], '\n'); j >= 0 {
			s = s[j+1:]
		}
	} else if len(s) > 300 {
		s = s[len(s)-300:]
	}
	if s == "" {
		return "(no output)"
	}
	return s
}

// stats is the process's rusage; call it after it exited.
func (p *proc) stats() ProcStats {
	st := ProcStats{Role: p.role, Argv: p.argv, WallSec: p.wall.Seconds()}
	st.UserSec, st.SysSec, st.MaxRSSKB, st.Switches = rusage(p.cmd.ProcessState)
	return st
}

// rusage is the CPU time and peak resident set of an exited process, as
// wait4 returned them (what /usr/bin/time prints): the process's own,
// with any children it waited for. Through `ip netns exec` and `taskset`,
// which exec the command in place, the peak is the command's (or theirs,
// before the exec, when larger: a few MB), and its context switches.
// Zero for no process.
func rusage(ps *os.ProcessState) (user, sys float64, maxRSSKB, switches int64) {
	if ps == nil {
		return 0, 0, 0, 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, 0, 0
	}
	return tvSec(ru.Utime), tvSec(ru.Stime), maxRSSKiB(ru.Maxrss), ru.Nvcsw + ru.Nivcsw
}

func tvSec(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// clientServer runs a server in one host and, once it listens on port, a
// client in the other; it waits for the client, then for the server to
// exit by itself (stopServer: ends it instead). Both are dead when it
// returns, whatever happened.
func clientServer(ctx context.Context, srvHost *netlab.Host, srvArgv []string, network string, port int,
	cliHost *netlab.Host, cliArgv []string, timeout time.Duration, stopServer bool) (srv, cli *proc, err error) {
	if srv, err = startProc(srvHost, "server", srvArgv); err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			srv.kill(syscall.SIGKILL)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = netlab.WaitPort(wctx, srv.pid(), network, port)
	cancel()
	if err != nil {
		return srv, nil, fmt.Errorf("%w: %s", err, srv.lastWords())
	}
	if cli, err = startProc(cliHost, "client", cliArgv); err != nil {
		return srv, nil, err
	}
	if err = cli.wait(ctx, timeout); err != nil {
		return srv, cli, err
	}
	if stopServer {
		srv.stop()
		return srv, cli, nil
	}
	if err = srv.wait(ctx, 10*time.Second); err != nil {
		return srv, cli, fmt.Errorf("server: %w", err)
	}
	return srv, cli, nil
}

// errSkip marks a workload that cannot run here, with the reason.
var errSkip = errors.New("skipped")
