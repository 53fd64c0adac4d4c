package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCase(t *testing.T) {
	for _, tc := range []struct {
		name, tx, rx string
		udp          bool
		bufLen       int
		want         Case
	}{
		{"defaults, TCP", "", "", false, 0, Case{Tx: "readwrite", Rx: "readwrite", BufLen: 128 << 10}},
		{"UDP with options", "mmsg:gso,batch=32", "mmsg:gro", true, 0,
			Case{Tx: "mmsg", TxOpts: "gso,batch=32", Rx: "mmsg", RxOpts: "gro", UDP: true, BufLen: 64}},
		{"sendfile to trunc, a length", "sendfile", "trunc", false, 65536, Case{Tx: "sendfile", Rx: "trunc", BufLen: 65536}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCase(tc.tx, tc.rx, tc.udp, tc.bufLen)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseCase (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []struct{ tx, rx string }{{"MMSG", ""}, {"", ":gro"}, {"mmsg gso", ""}, {"-t", ""}} {
		if c, err := ParseCase(bad.tx, bad.rx, true, 0); err == nil {
			t.Errorf("ParseCase(%q, %q) = %+v, want an error", bad.tx, bad.rx, c)
		}
	}
	if _, err := ParseCase("", "", false, -1); err == nil {
		t.Error("ParseCase with a negative length: no error")
	}
	// The case's ttcp arguments follow the usual conventions.
	e := &Env{Blast: "blast", Caps: Caps{OptionArgs: func(name, opts string) []string { return []string{"--backend", name + ":" + opts} }}}
	c, _ := ParseCase("mmsg:gso", "mmsg:gro", true, 0)
	s := c.spec()
	if s.txBackend != "mmsg" || s.txOpt != "gso" || s.rxOpt != "gro" || !s.udp || s.bufLen != 64 {
		t.Errorf("spec %+v", s)
	}
	if got := e.backendArgs(s.txBackend, s.txOpt); !cmp.Equal(got, []string{"--backend", "mmsg:gso"}) {
		t.Errorf("transmitter's backend flags %v", got)
	}
}
