package render

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/control/result"
)

// TestRenderersAgree holds the JSON and CSV renderers of every golden
// Result to one summary: each direction's sent and received bytes in the
// JSON's sum_sent and sum_received (and their _bidir_reverse) are those
// of the CSV's sum_sent and sum_received rows and of Summarize.
func TestRenderersAgree(t *testing.T) {
	for _, tc := range csvResults() {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r()
			if !r.Connected() {
				t.Skip("no summary without a connection")
			}
			want := map[string]int64{}
			dirSender := map[bool]bool{} // by Reverse
			for _, d := range result.Summarize(r).Dirs {
				dirSender[d.Reverse] = d.Sender
				if d.Empty() {
					continue
				}
				dir := strconv.FormatBool(d.Sender)
				want["sent/"+dir] = d.Sent.Bytes
				want["received/"+dir] = d.Received.Bytes
			}

			b, err := JSONBytes(r)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				End map[string]json.RawMessage `json:"end"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			fromJSON := map[string]int64{}
			for key, raw := range doc.End {
				view, ok := strings.CutPrefix(key, "sum_")
				if !ok || !(strings.HasPrefix(view, "sent") || strings.HasPrefix(view, "received")) {
					continue
				}
				var sum struct {
					Bytes  int64 `json:"bytes"`
					Sender bool  `json:"sender"`
				}
				if err := json.Unmarshal(raw, &sum); err != nil {
					t.Fatal(err)
				}
				// The UDP sum_sent and sum_received say sender true and
				// false whatever the direction: the direction is the
				// key's.
				reverse := strings.HasSuffix(view, "_bidir_reverse")
				view = strings.TrimSuffix(view, "_bidir_reverse")
				fromJSON[view+"/"+strconv.FormatBool(dirSender[reverse])] = sum.Bytes
			}
			if diff := cmp.Diff(want, fromJSON); diff != "" {
				t.Errorf("JSON sums differ from the summary (-want +got):\n%s", diff)
			}

			var csv strings.Builder
			if err := WriteCSV(&csv, r); err != nil {
				t.Fatal(err)
			}
			fromCSV := map[string]int64{}
			for _, row := range readCSV(t, csv.String()) {
				view, ok := strings.CutPrefix(row["kind"], "sum_")
				if !ok {
					continue
				}
				n, err := strconv.ParseInt(row["bytes"], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				fromCSV[view+"/"+row["sender"]] = n
			}
			// The CSV leaves out a sum it does not know all of; the
			// JSON writes the bytes it has.
			for _, d := range result.Summarize(r).Dirs {
				dir := strconv.FormatBool(d.Sender)
				if !d.Empty() && !d.Sent.Known {
					delete(want, "sent/"+dir)
				}
				if !d.Empty() && !d.Received.Known {
					delete(want, "received/"+dir)
				}
			}
			if diff := cmp.Diff(want, fromCSV); diff != "" {
				t.Errorf("CSV sums differ from the summary (-want +got):\n%s", diff)
			}
		})
	}
}
