package netlab

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// WaitPort waits until process pid has a socket bound to port: a
// listening one for "tcp", any for "udp". It reads /proc/PID/net, which
// shows the process's own namespace, so it neither needs to enter the
// namespace nor touches the socket (a ttcp receiver accepts exactly one
// connection; a probe would use it up).
func WaitPort(ctx context.Context, pid int, network string, port int) error {
	files := []string{"tcp", "tcp6"}
	if network == "udp" {
		files = []string{"udp", "udp6"}
	}
	for {
		for _, f := range files {
			if bound(fmt.Sprintf("/proc/%d/net/%s", pid, f), port, network == "tcp") {
				return nil
			}
		}
		if !alive(pid) {
			return fmt.Errorf("netlab: process %d exited before binding %s port %d", pid, network, port)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("netlab: process %d did not bind %s port %d: %w", pid, network, port, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func bound(file string, port int, listening bool) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil || int(p) != port {
			continue
		}
		if !listening || fields[3] == "0A" {
			return true
		}
	}
	return false
}

// alive reports whether pid runs (a zombie has exited).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces, so read after the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
