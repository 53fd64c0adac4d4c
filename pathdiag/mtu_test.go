package pathdiag

import (
	"strings"
	"testing"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/pathmtu"
)

func TestD29(t *testing.T) {
	dir := func(name string, pmtu, lost, senderMTU, receiverMTU, learned int) MTUDirection {
		return MTUDirection{Name: name, Direction: pathmtu.Direction{Measured: true, PMTU: pmtu, Exact: true, Lost: lost, SenderMTU: senderMTU, Learned: learned},
			SenderIface: name + "-tx", ReceiverIface: name + "-rx", SenderIfaceMTU: senderMTU, ReceiverIfaceMTU: receiverMTU}
	}
	notMeasured := MTUDirection{Name: "download", Direction: pathmtu.Direction{NotMeasured: "the server does not answer the path-MTU probe (iperf3, or a blast server older than this one)"}}
	for _, tc := range []struct {
		name string
		dirs []MTUDirection
		want []string // rule and severity
		// words in the first finding's summary, evidence and fix
		summary, evidence, fix string
	}{
		{name: "healthy: both ends' MTU both ways", dirs: []MTUDirection{dir("upload", 1500, 0, 1500, 1500, 1500), dir("download", 1500, 0, 1500, 1500, 1500)}},
		{name: "jumbo both ways", dirs: []MTUDirection{dir("upload", 9000, 0, 9000, 9000, 9000), dir("download", 9000, 0, 9000, 9000, 9000)}},
		// Ends that differ with nothing smaller between are D16's.
		{name: "ends differ", dirs: []MTUDirection{dir("upload", 1500, 1501, 9000, 1500, 9000), dir("download", 1500, 0, 1500, 9000, 1500)}},
		{name: "hop upload, ICMP back", dirs: []MTUDirection{dir("upload", 1500, 1501, 9000, 9000, 1500), dir("download", 9000, 0, 9000, 9000, 9000)},
			want:     []string{"D29 WARN"},
			summary:  "a 1500-byte hop between the hosts in the upload direction: packets up to the ends' 9000-byte MTU do not pass",
			evidence: "upload: don't-fragment probes up to 1500 bytes arrived, 1501 did not (twice); MTU 9000 on the sender's upload-tx, 9000 on the receiver's upload-rx; ICMP 'fragmentation needed' came back (the sender's kernel learned 1500); download: 9000 bytes passed, the ends' MTU",
			fix:      "set the ends' MTU to 1500 (ip link set dev IFACE mtu 1500 on both hosts) or raise the hop's to 9000; until then UDP datagrams over 1472 bytes (-l 1472) sent in the upload direction are lost"},
		{name: "hop download, black hole", dirs: []MTUDirection{dir("upload", 9000, 0, 9000, 9000, 9000), dir("download", 1500, 1501, 9000, 9000, 9000)},
			want:     []string{"D29 ERROR"},
			summary:  "in the download direction",
			evidence: "no ICMP 'fragmentation needed' came back (the sender's kernel still holds 9000): a path-MTU black hole that way",
			fix:      "net.ipv4.tcp_mtu_probing=1"},
		{name: "hop both ways", dirs: []MTUDirection{dir("upload", 1500, 1501, 9000, 9000, 1500), dir("download", 1500, 1501, 9000, 9000, 1500)},
			want:    []string{"D29 WARN"},
			summary: "a 1500-byte hop between the hosts in both directions"},
		{name: "search cut short", dirs: []MTUDirection{{Name: "upload", Direction: pathmtu.Direction{Measured: true, PMTU: 1492, Lost: 1500, SenderMTU: 9000}, SenderIfaceMTU: 9000, ReceiverIfaceMTU: 9000}},
			want:    []string{"D29 INFO"},
			summary: "path MTU in the upload direction: at least 1492 bytes, not found exactly"},
		{name: "neither way measured", dirs: []MTUDirection{{Name: "upload", Direction: notMeasured.Direction}, notMeasured},
			want:     []string{"D29 INFO"},
			summary:  "path MTU not measured",
			evidence: "iperf3"},
		{name: "download not measured", dirs: []MTUDirection{dir("upload", 1500, 0, 1500, 1500, 1500), notMeasured},
			want:     []string{"D29 INFO"},
			summary:  "path MTU not measured in the download direction",
			evidence: "iperf3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := D29(tc.dirs...)
			var got []string
			for _, f := range fs {
				got = append(got, string(f.Rule)+" "+f.Severity.String())
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("findings %v, want %v: %v", got, tc.want, fs)
			}
			if len(fs) == 0 {
				return
			}
			f := fs[0]
			for _, c := range []struct{ what, got, want string }{{"summary", f.Summary, tc.summary}, {"evidence", f.Evidence, tc.evidence}, {"fix", f.Fix, tc.fix}} {
				if !strings.Contains(c.got, c.want) {
					t.Errorf("%s %q lacks %q", c.what, c.got, c.want)
				}
			}
			if f.Severity >= finding.Warn && f.Iface != "" {
				t.Errorf("a path finding on interface %q", f.Iface)
			}
		})
	}
}
