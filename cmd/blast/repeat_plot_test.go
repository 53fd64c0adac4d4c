package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// client --repeat N --plot draws every run: a legend entry and a line in
// its own color per run (tab10's first colors), and the caption carries
// the printed summary line word for word, its mean the same figure, whose
// it is and how many runs.
func TestClientRepeatPlotEveryRun(t *testing.T) {
	port, _ := blastServerPort(t)
	file := filepath.Join(t.TempDir(), "runs.svg")
	const runs = 3
	code, out, stderr := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-i", "0.25", "-b", "20M",
		"--repeat", strconv.Itoa(runs), "--plot", file)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	m := regexp.MustCompile(`(?m)^blast: (receivers' throughput: mean ([0-9.]+ \S+) .*, 3 runs)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line of 3 runs:\n%s", out)
	}
	line, mean := m[1], m[2]
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	texts, styles := svgTexts(b)
	all := strings.Join(texts, " ")
	for k := 1; k <= runs+1; k++ {
		n := 0
		for _, s := range texts {
			if s == fmt.Sprintf("run %d", k) {
				n++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[k <= runs]; n != want {
			t.Errorf("%d legend entries \"run %d\", want %d (one per run of %d); texts:\n%s", n, k, want, runs, strings.Join(texts, "\n"))
		}
	}
	for k, c := range []string{"#1F77B4", "#FF7F0E", "#2CA02C"} {
		series := 0
		for _, s := range styles {
			if strings.Contains(s, "stroke:"+c) {
				series++
			}
		}
		if series < 2 { // its line and its legend swatch
			t.Errorf("run %d: %d paths stroked %s, want its line and its swatch", k+1, series, c)
		}
	}
	if want := "R" + line[1:] + "."; !strings.Contains(all, want) {
		t.Errorf("the caption does not carry the printed summary %q; texts:\n%s", want, strings.Join(texts, "\n"))
	}
	c := regexp.MustCompile(`Receivers' throughput: mean ([0-9.]+ \S+) `).FindStringSubmatch(all)
	if c == nil || c[1] != mean {
		t.Errorf("caption's mean %v, the printed summary's %s", c, mean)
	}
	if !strings.Contains(all, "receivers' mean "+mean) || !strings.Contains(all, ", 3 runs") {
		t.Errorf("the legend's mean or the title's run count is missing; texts:\n%s", strings.Join(texts, "\n"))
	}
}

// svgTexts are an SVG's texts in file order, and its paths' styles.
func svgTexts(b []byte) (texts, styles []string) {
	d := xml.NewDecoder(strings.NewReader(string(b)))
	in := false
	for {
		tok, err := d.Token()
		if err != nil {
			return texts, styles
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			in = tok.Name.Local == "text"
			for _, a := range tok.Attr {
				if a.Name.Local == "style" && tok.Name.Local == "path" {
					styles = append(styles, a.Value)
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
}
