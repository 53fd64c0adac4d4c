package plot

import (
	"bytes"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"gonum.org/v1/plot/vg"

	"github.com/blastnet/blast/internal/golden"
)

// Every picture's SVG, drawn by a second renderer (librsvg's
// rsvg-convert, with none of the Liberation fonts installed), looks as the
// PNG gonum draws with them: its text takes the same room (the title's
// and the caption's ink spans the same pixels) and hardly a pixel of the
// whole differs. When the SVG held <text> in Liberation Sans, rsvg set it
// in DejaVu Sans: titles ran past the page's edge and 1.5 to 3% of the
// pixels differed; as outlines, at most 0.4% do (edges smoothed
// differently). Both look as the picture kept for each kind in
// testdata/golden (reviewed when written with -update): gonum's PNG
// within 0.005% of its pixels (one letter of an axis label changed is
// 0.056%), rsvg's within 1%.
func TestSVGRendersAsPNG(t *testing.T) {
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		t.Skip("rsvg-convert is not installed (apt-get install librsvg2-bin; make deps does)")
	}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			svg, own, other := filepath.Join(dir, "p.svg"), filepath.Join(dir, "p.png"), filepath.Join(dir, "rsvg.png")
			if err := c.draw(svg); err != nil {
				t.Fatal(err)
			}
			if err := c.draw(own); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(rsvg, "-w", "1200", "-h", "900", "-b", "white", svg, "-o", other)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("rsvg-convert: %v: %s", err, out)
			}
			a, b := readPNG(t, own), readPNG(t, other)
			if a.Bounds() != b.Bounds() {
				t.Fatalf("gonum drew %v, rsvg %v", a.Bounds(), b.Bounds())
			}
			// Both look as the picture reviewed and kept (-update
			// rewrites it from gonum's PNG).
			kept := filepath.Join("testdata", "golden", c.name+".png")
			if golden.Updating() {
				png, err := os.ReadFile(own)
				if err != nil {
					t.Fatal(err)
				}
				golden.Check(t, kept, png)
			} else if g := readPNG(t, kept); g.Bounds() != a.Bounds() {
				t.Errorf("%s is %v, the picture now %v (rerun with -update if intended)", kept, g.Bounds(), a.Bounds())
			} else {
				// gonum draws the same pixels from the same figures
				// (a moved caption or a clipped title is a few
				// thousandths of them); rsvg smooths edges its own way.
				for _, r := range []struct {
					who   string
					img   image.Image
					bound float64
				}{{"gonum's PNG", a, 0.00005}, {"rsvg's rendering of the SVG", b, 0.01}} {
					if d := differing(g, r.img); d > r.bound {
						t.Errorf("%.3f%% of the pixels of %s differ from %s, want under %.2f%% (rerun with -update if intended, and look at it)", 100*d, r.who, kept, 100*r.bound)
					}
				}
			}
			if d := differing(a, b); d > 0.01 {
				t.Errorf("%.2f%% of the pixels differ between gonum's PNG and rsvg's rendering of the SVG, want under 1%%", 100*d)
			}
			h := a.Bounds().Dy()
			for _, band := range []struct {
				name   string
				y0, y1 int
			}{{"title", 0, 60}, {"caption", h - 90, h}} {
				ea, eb := inkBox(a, band.y0, band.y1), inkBox(b, band.y0, band.y1)
				if abs(ea.Min.X-eb.Min.X) > 3 || abs(ea.Max.X-eb.Max.X) > 3 || abs(ea.Min.Y-eb.Min.Y) > 3 || abs(ea.Max.Y-eb.Max.Y) > 3 {
					t.Errorf("the %s's text spans %v in gonum's PNG, %v in rsvg's", band.name, ea, eb)
				}
			}
			if *keep != "" {
				b, _ := os.ReadFile(other)
				os.WriteFile(filepath.Join(*keep, c.name+".rsvg.png"), b, 0o644)
			}
		})
	}
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

func lightness(img image.Image, x, y int) int {
	r, g, b, _ := img.At(x, y).RGBA()
	return int((r + g + b) / 3 >> 8)
}

// differing is the share of pixels whose lightness differs by more than
// 96 of 255 between a and b.
func differing(a, b image.Image) float64 {
	r := a.Bounds()
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if abs(lightness(a, x, y)-lightness(b, x, y)) > 96 {
				n++
			}
		}
	}
	return float64(n) / float64(r.Dx()*r.Dy())
}

// inkBox is the box of the dark pixels (text, mostly) in rows y0 to y1.
func inkBox(img image.Image, y0, y1 int) image.Rectangle {
	box := image.Rectangle{Min: image.Pt(1<<30, 1<<30)}
	for y := y0; y < y1; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if lightness(img, x, y) < 160 {
				box.Min.X, box.Min.Y = min(box.Min.X, x), min(box.Min.Y, y)
				box.Max.X, box.Max.Y = max(box.Max.X, x+1), max(box.Max.Y, y+1)
			}
		}
	}
	return box
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// Without a second renderer at hand: every <text> of an SVG is the
// invisible copy (transparent, held to its outline's width by
// textLength), and an outline spans the width the layout measured.
func TestSVGTextIsOutlined(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tcp.svg")
	if err := ClientRun(path, tcpRun()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	texts := regexp.MustCompile(`(?s)<text [^>]*>`).FindAll(b, -1)
	if len(texts) < 10 {
		t.Fatalf("%d texts, want the picture's words", len(texts))
	}
	for _, m := range texts {
		if !bytes.Contains(m, []byte(`lengthAdjust="spacingAndGlyphs"`)) || !bytes.Contains(m, []byte("textLength=")) ||
			!bytes.Contains(m, []byte("fill-opacity:0")) {
			t.Errorf("a visible or unfixed text: %s", m)
		}
	}
	sty := textStyle(sansBold, titleSize, black)
	face := sty.Handler.Cache().Lookup(sty.Font, sty.Font.Size)
	const s = "blast client -> 198.18.0.2: TCP, 4 streams"
	p, err := glyphPath(face, vg.Point{}, s)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := vg.Length(math.Inf(1)), vg.Length(math.Inf(-1))
	for _, c := range p {
		if c.Type != vg.CloseComp {
			lo, hi = min(lo, c.Pos.X), max(hi, c.Pos.X)
		}
	}
	// The ink lies within the advances, short of them by the first and
	// last glyphs' side bearings (under a point at this size).
	if w := face.Width(s); lo < 0 || hi > w || w-(hi-lo) > vg.Points(2) {
		t.Errorf("the outline spans %.2f to %.2f pt, the layout's width is %.2f pt", lo.Points(), hi.Points(), w.Points())
	}
}
