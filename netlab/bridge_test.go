package netlab

import "testing"

func TestBridgeOptionsCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		opt  BridgeOptions
		ok   bool
	}{
		{"two hosts", 2, BridgeOptions{}, true},
		{"most hosts", MaxBridgeHosts, BridgeOptions{RateMbit: 100, Queues: 4}, true},
		{"one host", 1, BridgeOptions{}, false},
		{"no hosts", 0, BridgeOptions{}, false},
		{"too many hosts", MaxBridgeHosts + 1, BridgeOptions{}, false},
		{"negative rate", 4, BridgeOptions{RateMbit: -1}, false},
		{"negative queues", 4, BridgeOptions{Queues: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.opt.check(tc.n); (err == nil) != tc.ok {
				t.Errorf("check(%d, %+v) = %v, want ok %v", tc.n, tc.opt, err, tc.ok)
			}
			if !tc.ok {
				if lab, err := NewBridged(tc.n, tc.opt); err == nil {
					lab.Close()
					t.Errorf("NewBridged(%d, %+v) built a lab", tc.n, tc.opt)
				}
			}
		})
	}
}
