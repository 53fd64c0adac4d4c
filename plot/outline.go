package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"regexp"

	xfont "golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// An SVG's text is drawn as the outlines of its glyphs, from the same
// Liberation fonts (compiled into blast by gonum) that laid the picture
// out: every viewer draws the same shapes at the same places, whatever
// fonts it has. A viewer that lacked Liberation Sans drew <text> in
// another font (DejaVu Sans on Debian), wider, and titles ran off the
// page and legends over their swatches. Each outline is followed by the
// same text as an invisible <text> element, its width fixed by textLength
// to the outline's, so that the words can still be found, selected and
// read out, and a viewer's own font changes nothing that is seen.

// outlineCanvas is an SVG canvas that fills its text as glyph outlines.
type outlineCanvas struct {
	*vgsvg.Canvas
	// widths are the widths of the texts, in points, in the order they
	// were drawn: the order of the <text> elements in the file.
	widths []float64
}

// hiddenText is the color the invisible copies are written in; the file
// is rewritten to make it transparent (vgsvg writes no opacity for text).
var hiddenText = color.RGBA{R: 0x01, G: 0x02, B: 0x03, A: 0xff}

func (c *outlineCanvas) FillString(f font.Face, pt vg.Point, s string) {
	if p, err := glyphPath(f, pt, s); err == nil {
		c.Fill(p)
	} else {
		// No outline for this text (a font without glyph data): the text
		// itself, as before.
		c.Canvas.FillString(f, pt, s)
		c.widths = append(c.widths, -1)
		return
	}
	c.Push()
	c.SetColor(hiddenText)
	c.Canvas.FillString(f, pt, s)
	c.Pop()
	c.widths = append(c.widths, f.Width(s).Points())
}

// glyphPath is s set in f with its baseline's left end at pt: the glyphs'
// outlines, placed by the advances and kerning that f.Width sums, so that
// the outline is exactly as wide as the layout measured it.
func glyphPath(f font.Face, pt vg.Point, s string) (vg.Path, error) {
	if f.Face == nil {
		return nil, errors.New("plot: no font data")
	}
	var (
		buf  sfnt.Buffer
		upem = fixed.Int26_6(f.Face.UnitsPerEm())
		// At upem pixels per em (as 26.6), a 26.6 value is a font unit.
		scale = f.Font.Size / vg.Points(float64(upem))
		x     int
		prev  sfnt.GlyphIndex
		has   bool
		path  vg.Path
		at    = func(p fixed.Point26_6) vg.Point {
			return vg.Point{X: pt.X + vg.Length(x+int(p.X))*scale, Y: pt.Y - vg.Length(p.Y)*scale}
		}
		hinting   = xfont.HintingNone // gonum's: widths scale with the size
		openShape bool
	)
	for _, r := range s {
		idx, err := f.Face.GlyphIndex(&buf, r)
		if err != nil {
			return nil, err
		}
		if has {
			k, err := f.Face.Kern(&buf, prev, idx, upem, hinting)
			switch {
			case err == nil:
				x += int(k)
			case errors.Is(err, sfnt.ErrNotFound):
			default:
				return nil, err
			}
		}
		segs, err := f.Face.LoadGlyph(&buf, idx, upem, nil)
		if err != nil {
			return nil, err
		}
		for _, sg := range segs {
			switch sg.Op {
			case sfnt.SegmentOpMoveTo:
				if openShape {
					path.Close()
				}
				path.Move(at(sg.Args[0]))
				openShape = true
			case sfnt.SegmentOpLineTo:
				path.Line(at(sg.Args[0]))
			case sfnt.SegmentOpQuadTo:
				path.QuadTo(at(sg.Args[0]), at(sg.Args[1]))
			case sfnt.SegmentOpCubeTo:
				path.CubeTo(at(sg.Args[0]), at(sg.Args[1]), at(sg.Args[2]))
			}
		}
		if openShape {
			path.Close()
			openShape = false
		}
		adv, err := f.Face.GlyphAdvance(&buf, idx, upem, hinting)
		if err != nil {
			return nil, err
		}
		x += int(adv)
		prev, has = idx, true
	}
	return path, nil
}

var textOpen = regexp.MustCompile(`<text `)

// finish rewrites the SVG c wrote: the invisible copies of the texts
// transparent, each as wide as its outline (textLength), in a generic
// font.
func (c *outlineCanvas) finish(svg []byte) ([]byte, error) {
	hidden := []byte(fmt.Sprintf("fill:#%02X%02X%02X", hiddenText.R, hiddenText.G, hiddenText.B))
	svg = bytes.ReplaceAll(svg, hidden, []byte("fill:#000000;fill-opacity:0"))
	i := 0
	var err error
	svg = textOpen.ReplaceAllFunc(svg, func(m []byte) []byte {
		if i >= len(c.widths) {
			err = errors.New("plot: more texts in the SVG than were drawn")
			return m
		}
		w := c.widths[i]
		i++
		if w <= 0 {
			return m
		}
		return []byte(fmt.Sprintf(`<text textLength="%.5g" lengthAdjust="spacingAndGlyphs" `, w))
	})
	if err == nil && i != len(c.widths) {
		err = fmt.Errorf("plot: %d texts drawn, %d in the SVG", len(c.widths), i)
	}
	return svg, err
}
