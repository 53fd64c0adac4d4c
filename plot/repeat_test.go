package plot

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/stats"
	"github.com/blastnet/blast/units"
)

// repeatedRuns is three runs of tcpRun, each a little faster than the
// one before, summarized by their receivers' figure.
func repeatedRuns() Repeated {
	var runs []*result.Result
	var values []float64
	for k := range 3 {
		r := tcpRun()
		var bytes int64
		for _, iv := range r.Intervals {
			for i := range iv.Streams {
				iv.Streams[i].Bytes = iv.Streams[i].Bytes * int64(10+k) / 10
				bytes += iv.Streams[i].Bytes
			}
		}
		runs = append(runs, r)
		values = append(values, 0.97*8*float64(bytes)/10)
	}
	s := stats.Summarize(values, stats.DefaultLevel)
	return Repeated{Runs: runs, Values: values, Summary: s, Whose: "receivers'",
		Line: "receivers' throughput: " + s.Line(units.SIRate)}
}

// svgTexts are an SVG's texts in file order, and its elements' styles.
func svgTexts(t *testing.T, b []byte) (texts, styles []string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(b)))
	in := false
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			in = tok.Name.Local == "text"
			for _, a := range tok.Attr {
				if a.Name.Local == "style" {
					styles = append(styles, tok.Name.Local+" "+a.Value)
				}
			}
		case xml.EndElement:
			in = false
		case xml.CharData:
			if in {
				texts = append(texts, string(tok))
			}
		}
	}
	return texts, styles
}

// CheckRepeatedSVG checks a ClientRuns or LatencyRuns SVG of n runs: a legend entry and
// a line in its own color per run and no more, and the caption holding
// line, the summary as printed, word for word.
func checkRepeatedSVG(t *testing.T, b []byte, n int, line string) {
	t.Helper()
	texts, styles := svgTexts(t, b)
	all := strings.Join(texts, " ")
	for k := 1; k <= n+1; k++ {
		has := false
		for _, s := range texts {
			has = has || s == fmt.Sprintf("run %d", k)
		}
		if has != (k <= n) {
			t.Errorf("legend entry \"run %d\": %v, want one per run for %d runs; texts:\n%s", k, has, n, strings.Join(texts, "\n"))
		}
	}
	for k := range n {
		c := palette[k%len(palette)]
		r, g, bl, _ := c.RGBA()
		stroke := fmt.Sprintf("stroke:#%02X%02X%02X", r>>8, g>>8, bl>>8)
		lines := 0
		for _, s := range styles {
			if strings.HasPrefix(s, "path ") && strings.Contains(s, stroke) {
				lines++
			}
		}
		// The run's series, and its legend swatch.
		if lines < 2 {
			t.Errorf("run %d: %d paths stroked %s, want its series and its swatch", k+1, lines, stroke)
		}
	}
	want := strings.ToUpper(line[:1]) + line[1:] + "."
	if !strings.Contains(all, want) {
		t.Errorf("the caption does not carry the summary %q; texts:\n%s", want, strings.Join(texts, "\n"))
	}
	mean := regexp.MustCompile(`(?i)(?:throughput|round trip \(µs\)): (?:mean )?([0-9.]+(?: [a-zA-Z/]+)?)`)
	if m, c := mean.FindStringSubmatch(line), mean.FindStringSubmatch(all); m == nil || c == nil || m[1] != c[1] {
		t.Errorf("the caption's mean %v differs from the summary's %v", c, m)
	}
}

func TestClientRunsEveryRun(t *testing.T) {
	rep := repeatedRuns()
	for _, n := range []int{1, 3} {
		r := rep
		r.Runs, r.Values = rep.Runs[:n], rep.Values[:n]
		r.Summary = stats.Summarize(r.Values, stats.DefaultLevel)
		r.Line = "receivers' throughput: " + r.Summary.Line(units.SIRate)
		path := filepath.Join(t.TempDir(), "runs.svg")
		if err := ClientRuns(path, r); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		checkRepeatedSVG(t, b, n, r.Line)
		texts, _ := svgTexts(t, b)
		all := strings.Join(texts, " ")
		for _, w := range []string{fmt.Sprintf("upload (readwrite), %d run", n), "receivers' mean " + units.SIRate(r.Summary.Mean), "the sender's (this side's)"} {
			if !strings.Contains(all, w) {
				t.Errorf("%d runs: no text %q:\n%s", n, w, strings.Join(texts, "\n"))
			}
		}
		if n > 1 && !strings.Contains(all, "receivers' 95% CI of the mean") {
			t.Errorf("%d runs: the interval is not in the legend", n)
		}
	}
	// The time axis reaches the last interval's end, not its middle.
	if xy, end := runSum(rep.Runs[0]); len(xy) != 10 || end != 10 || xy[9].X != 9.5 {
		t.Errorf("runSum: %d points, the last at %v, end %v; want 10, 9.5, 10", len(xy), xy[len(xy)-1].X, end)
	}
	if err := ClientRuns(filepath.Join(t.TempDir(), "x.svg"), Repeated{Runs: rep.Runs, Values: rep.Values[:1]}); err == nil {
		t.Error("a value short of the runs: no error")
	}
}
