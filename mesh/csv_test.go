package mesh

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/internal/testkit"
)

func TestWriteCSV(t *testing.T) {
	for _, c := range docCases {
		if !c.json {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			d := c.doc()
			var b bytes.Buffer
			if err := WriteCSV(&b, d); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", c.name+".csv"), b.String())
			rows := testkit.ReadCSV(t, b.String(), CSVHeader)
			if len(rows) != len(d.Cells) {
				t.Fatalf("%d rows, want one per cell: %d", len(rows), len(d.Cells))
			}
			col := map[string]int{}
			for i, h := range CSVHeader {
				col[h] = i
			}
			for i, r := range rows {
				cell := d.Cells[i]
				got := []string{r[col["src"]], r[col["dst"]], r[col["proto"]], r[col["err"]]}
				if diff := cmp.Diff([]string{cell.Src, cell.Dst, cell.Proto, cell.Err}, got); diff != "" {
					t.Errorf("row %d (-want +got):\n%s", i+1, diff)
				}
				if cell.Err != "" {
					if r[col["bps"]] != "" {
						t.Errorf("row %d: a failed test has bps %q, want none", i+1, r[col["bps"]])
					}
					continue
				}
				bps, err := strconv.ParseFloat(r[col["bps"]], 64)
				if err != nil || bps < cell.Bps-0.5 || bps > cell.Bps+0.5 {
					t.Errorf("row %d: bps %q, want %.0f", i+1, r[col["bps"]], cell.Bps)
				}
				if cell.Proto == "udp" {
					loss, err := strconv.ParseFloat(r[col["loss_pct"]], 64)
					if err != nil || loss < 100*cell.Loss-1e-4 || loss > 100*cell.Loss+1e-4 {
						t.Errorf("row %d: loss_pct %q, want %.4f", i+1, r[col["loss_pct"]], 100*cell.Loss)
					}
				}
			}
		})
	}
}
