package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What the client asks of the server's own streams: iperf3's repeating
// payload on the bytes the server sends, and the CPU its streams run on.
func TestServerTakesPeerPayloadAndAffinity(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{})
	out := filepath.Join(t.TempDir(), "received")
	zero := 0
	r := runClient(t, Config{Port: port, Bytes: 100_000, Reverse: true, RepeatingPayload: true, File: out, ServerAffinity: &zero})
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100_000 {
		t.Fatalf("received %d bytes into the file, want 100000", len(got))
	}
	for i, c := range got {
		if c < '0' || c > '9' {
			t.Fatalf("byte %d is %q: not iperf3's repeating '0'..'9' payload", i, c)
		}
	}
	srv := log.wait(t, 1)[0]
	if srv.Err != nil || len(srv.Notes) != 0 {
		t.Errorf("server: %v, notes %q", srv.Err, srv.Notes)
	}
	if r.Params.ServerAffinity == nil || *r.Params.ServerAffinity != 0 {
		t.Errorf("server_affinity not sent: %v", r.Params.ServerAffinity)
	}

	// A CPU the server does not have: the test runs, unpinned, and says so.
	far := 1000
	runClient(t, Config{Port: port, Duration: time.Second, ServerAffinity: &far})
	srv = log.wait(t, 2)[1]
	if srv.Err != nil || len(srv.Notes) != 1 || !strings.Contains(srv.Notes[0], "CPU 1000, which is not online or not allowed here") {
		t.Errorf("server: %v, notes %q", srv.Err, srv.Notes)
	}
}
