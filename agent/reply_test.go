package agent

import "testing"

// TestReplyLine: the log line of a test an agent ran gives its rate in
// blast's SI unit, as its other lines do (it wrote "9410.00 Mbit/s").
func TestReplyLine(t *testing.T) {
	for _, tc := range []struct {
		r    Reply
		want string
	}{
		{Reply{Bps: 9.41e9, Seconds: 10, Retrans: 3}, "9.41 Gbit/s over 10.0 s, 3 retransmits"},
		{Reply{Bps: 94.1e6, Seconds: 2, Retrans: 0}, "94.10 Mbit/s over 2.0 s, 0 retransmits"},
		{Reply{Err: "connection refused"}, "failed: connection refused"},
	} {
		if got := tc.r.line(); got != tc.want {
			t.Errorf("line() = %q, want %q", got, tc.want)
		}
	}
}
