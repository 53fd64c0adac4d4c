package control

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"golang.org/x/sys/unix"
)

// --bind-dev: the listener, the TCP streams it accepts and the UDP
// sockets are bound to the interface.
func TestServerBindDev(t *testing.T) {
	if _, err := Listen(ServerConfig{Bind: "127.0.0.1", Port: 0, Device: "nosuch0"}); err == nil || !strings.Contains(err.Error(), "no such interface") {
		t.Errorf("--bind-dev nosuch0: %v, want no such interface", err)
	}
	var mu sync.Mutex
	var devs []string
	_, port, log := blastServer(t, ServerConfig{Device: "lo", Interval: 0, NoNIC: true,
		OnStart: func(r *result.Result) {
			mu.Lock()
			defer mu.Unlock()
			for _, st := range r.Streams {
				dev, err := unix.GetsockoptString(st.Socket, unix.SOL_SOCKET, unix.SO_BINDTODEVICE)
				if err != nil {
					dev = err.Error()
				}
				devs = append(devs, dev)
			}
		}})
	runClient(t, Config{Port: port, Bytes: 4 << 20, Parallel: 2})
	runClient(t, Config{Port: port, UDP: true, Rate: 10e6, RateSet: true, Duration: time.Second})
	iperf3Client(t, port, "-t", "1", "-R")
	for _, r := range log.wait(t, 3) {
		if r.Err != nil {
			t.Errorf("server: %v", r.Err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(devs) != 4 {
		t.Fatalf("saw %d streams, want 4", len(devs))
	}
	for i, d := range devs {
		if d != "lo" {
			t.Errorf("stream %d is bound to %q, want lo", i, d)
		}
	}
}
