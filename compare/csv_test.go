package compare

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/internal/testkit"
)

// quotingRows are rows whose cells need CSV quoting: options with a
// comma, an error with quotes, notes with a comma and a line break.
func quotingRows() []Row {
	return []Row{
		measured{c: Case{Tx: "mmsg", Rx: "mmsg", TxOpts: "batch=64,gso", RxOpts: "batch=64,gro"}, udp: true, seconds: 2.000044,
			tx: dgrams(5322880, 64, 83170), rx: dgrams(5322752, 64, 83168),
			txCPU: CPU{User: 0.099, Sys: 1.802}, rxCPU: CPU{User: 0.141, Sys: 1.781},
			txFacts: map[string]int64{engine.FactSyscalls: 83170}, rxFacts: map[string]int64{engine.FactSyscalls: 83168},
			notes: []string{"mmsg: 64 datagrams a call, GSO segments of 1472 bytes", "mmsg: the receiver said \"GRO on\"\nand merged them"}}.row(),
		{Case: Case{Tx: "mmsg", Rx: "afxdp", TxOpts: "batch=64,gso"}.Name(),
			Error: `receive: afxdp: attach XDP to "bl1cf.1b": device or resource busy, another program is attached`},
	}
}

var csvRowSets = []struct {
	name string
	rows func() []Row
}{
	{"lab-tcp", tcpRows},
	{"lab-udp", udpRows},
	{"host-reverse", hostRows},
	{"quoting", quotingRows},
}

func TestCSVGolden(t *testing.T) {
	for _, tc := range csvRowSets {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteCSV(&b, tc.rows()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/csv-"+tc.name+".csv", b.String())
		})
	}
}

// TestCSVParses reads each set's CSV back: the header, one row per case
// as long as the header, the case's name exactly (and again from tx,
// tx_opts, rx and rx_opts), its status and reason, empty figures on a
// skipped or failed row, numbers in the figures of the others, the UDP
// figures on UDP rows only, and CPU cells empty where the CPU is not
// measured.
func TestCSVParses(t *testing.T) {
	col := func(name string) int { return slices.Index(csvHeader, name) }
	for _, tc := range csvRowSets {
		t.Run(tc.name, func(t *testing.T) {
			rows := tc.rows()
			var b strings.Builder
			if err := WriteCSV(&b, rows); err != nil {
				t.Fatal(err)
			}
			recs := testkit.ReadCSV(t, b.String(), csvHeader)
			if len(recs) != len(rows) {
				t.Fatalf("%d rows, want %d", len(recs), len(rows))
			}
			for i, rec := range recs {
				r := rows[i]
				if rec[col("case")] != r.Case {
					t.Errorf("row %d: case %q, want %q", i+1, rec[col("case")], r.Case)
				}
				c := Case{Tx: rec[col("tx")], TxOpts: rec[col("tx_opts")], Rx: rec[col("rx")], RxOpts: rec[col("rx_opts")]}
				if c.Name() != r.Case {
					t.Errorf("row %d: tx, tx_opts, rx, rx_opts make %q, want %q", i+1, c.Name(), r.Case)
				}
				status, reason := "ok", ""
				if r.Skipped != "" {
					status, reason = "skipped", r.Skipped
				} else if r.Error != "" {
					status, reason = "failed", r.Error
				}
				if rec[col("status")] != status || rec[col("reason")] != reason {
					t.Errorf("row %d: status %q reason %q, want %q %q", i+1, rec[col("status")], rec[col("reason")], status, reason)
				}
				if got, want := rec[col("notes")], strings.Join(r.Notes, "; "); got != want {
					t.Errorf("row %d: notes %q, want %q", i+1, got, want)
				}
				udp := r.Datagrams > 0 || r.SentDgrams > 0
				for j := col("seconds"); j < col("notes"); j++ {
					name, v := csvHeader[j], rec[j]
					if status != "ok" {
						if v != "" {
							t.Errorf("row %d (%s): %s = %q", i+1, status, name, v)
						}
						continue
					}
					udpOnly := strings.Contains(name, "datagrams") || name == "packets_per_second" || name == "lost_pct"
					cpuUnknown := (strings.HasPrefix(name, "tx_cpu") && r.TxCPUUnknown) || (strings.HasPrefix(name, "rx_cpu") && r.RxCPUUnknown) ||
						(name == "cpu_s_per_gb" && (r.TxCPUUnknown || r.RxCPUUnknown))
					switch {
					case udpOnly && !udp, cpuUnknown:
						if v != "" {
							t.Errorf("row %d: %s = %q, want empty", i+1, name, v)
						}
					case strings.HasSuffix(name, "syscalls") && v == "":
					default:
						if _, err := strconv.ParseFloat(v, 64); err != nil {
							t.Errorf("row %d: %s %q is not a number", i+1, name, v)
						}
					}
				}
			}
		})
	}
}
