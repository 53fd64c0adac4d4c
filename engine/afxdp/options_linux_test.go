package afxdp_test

import (
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/afxdp"
)

func TestConfigure(t *testing.T) {
	for _, tc := range []struct {
		opts    string
		want    afxdp.Backend
		wantErr string
	}{
		{opts: "", want: afxdp.Backend{}},
		{opts: "batch=64,zc", want: afxdp.Backend{Batch: 64, ZeroCopy: true}},
		{opts: "queues=2,threads=4,dstmac=02:00:00:00:00:01",
			want: afxdp.Backend{Queues: 2, Threads: 4, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}}},
		{opts: "batch=2048", wantErr: "batch=2048: at most 1024"},
		{opts: "queues=65", wantErr: "queues=65: at most 64"},
		{opts: "threads=300", wantErr: "threads=300: at most 256"},
		{opts: "dstmac=01:02", wantErr: "Ethernet address"},
		{opts: "gso", wantErr: `has no option "gso"`},
	} {
		t.Run(tc.opts, func(t *testing.T) {
			b, _, err := engine.Configure(afxdp.Backend{}, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Configure(%q) = %v, want an error containing %q", tc.opts, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b); diff != "" {
				t.Errorf("Configure(%q) (-want +got):\n%s", tc.opts, diff)
			}
		})
	}
}
