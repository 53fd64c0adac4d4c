package control

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/testkit"
)

// TestServerFDsFlat runs 30 tests against one server, some of them
// failing mid-test, and wants the process's descriptor count where it was:
// a server left running must not lose sockets (or NIC handles) per test.
func TestServerFDsFlat(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{Interval: 0})
	openFDs := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	run := func(i int) {
		cfg := Config{Host: "127.0.0.1", Port: port, Bytes: 256 << 10, Parallel: 1 + i%2, Reverse: i%3 == 1}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		failing := i%10 == 9
		if failing {
			// Stop the client once the streams are up: the server sees
			// the client go mid-test.
			cfg.Bytes, cfg.OnStart = 1<<40, func(*result.Result) { cancel() }
		}
		_, err := Run(ctx, cfg)
		switch {
		case failing && err == nil:
			t.Fatalf("test %d: cancelled mid-test, and it succeeded", i)
		case !failing && err != nil:
			t.Fatalf("test %d: %v", i, err)
		}
	}
	// The first tests open what lasts (the runtime's own descriptors).
	for i := range 5 {
		run(i)
	}
	log.wait(t, 5)
	before := openFDs()
	const tests = 30
	for i := range tests {
		run(i)
	}
	log.wait(t, 5+tests)
	// The last test's sockets close as its goroutines end.
	testkit.Eventually(30*time.Second, func() bool { return openFDs() == before })
	if after := openFDs(); after != before {
		ents, _ := os.ReadDir("/proc/self/fd")
		var what []string
		for _, e := range ents {
			l, _ := os.Readlink("/proc/self/fd/" + e.Name())
			what = append(what, l)
		}
		t.Errorf("open descriptors: %d before %d tests, %d after (want equal): %v", before, tests, after, what)
	}
}
