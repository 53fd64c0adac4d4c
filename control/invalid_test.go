package control

import (
	"errors"
	"strings"
	"testing"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/nicinfo"
)

// A result whose NIC report, on either end, has a finding that invalidates
// it fails with ErrInvalid naming the finding, and the server's log says
// "invalid" rather than "ok". A valid one says "ok", and then the most
// serious finding at WARN or above, which says why it was slow.
func TestInvalidResult(t *testing.T) {
	flap := &nicinfo.Result{Findings: []finding.Finding{
		{Rule: "D1", Severity: finding.Error, Summary: "duplex mismatch"},
		{Rule: "D10", Severity: finding.Error, Summary: "the link went down during the test: this result is not valid", Evidence: "Δcarrier_changes = 2", Invalid: true},
	}}
	healthy := &nicinfo.Result{Findings: []finding.Finding{{Rule: "D1", Severity: finding.Error, Summary: "duplex mismatch"}}}
	for _, tc := range []struct {
		r    *result.Result
		want string
	}{
		{&result.Result{NIC: healthy, RemoteNIC: healthy}, ""},
		{&result.Result{NIC: flap}, "the result is not valid: D10 the link went down during the test: this result is not valid (Δcarrier_changes = 2), here"},
		{&result.Result{NIC: healthy, RemoteNIC: flap}, "the result is not valid: D10 the link went down during the test: this result is not valid (Δcarrier_changes = 2), on the peer"},
	} {
		err := tc.r.Invalid()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("a valid result: %v", err)
		case tc.want != "" && (!errors.Is(err, result.ErrInvalid) || err.Error() != tc.want):
			t.Errorf("error %v, want %s", err, tc.want)
		}
		var log strings.Builder
		s := &Server{cfg: ServerConfig{Log: &log}}
		s.logResult(tc.r)
		outcome := "ok; ERROR D1 duplex mismatch ()"
		if tc.want != "" {
			outcome = "invalid: " + tc.want
		}
		if !strings.HasSuffix(log.String(), ": "+outcome+"\n") {
			t.Errorf("server log %q, want it to end %q", log.String(), outcome)
		}
	}
}
