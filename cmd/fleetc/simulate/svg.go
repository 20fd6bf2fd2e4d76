package simulate

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// SVG layout: one panel per class, stacked, each with backlog and in-flight lines, dead
// letters as a third, and the faults shaded.
const (
	svgWidth       = 800
	svgPanelHeight = 180
	svgMarginLeft  = 70
	svgMarginRight = 20
	svgMarginTop   = 30
	svgMarginBelow = 40
)

// The series a panel draws, each in its colour.
var svgLines = []struct {
	name, colour string
	value        func(Point) float64
}{
	{"backlog", "#d62728", func(p Point) float64 { return float64(p.Backlog) }},
	{"in flight", "#1f77b4", func(p Point) float64 { return float64(p.InFlight) }},
	{"dead-lettered (total)", "#7f7f7f", func(p Point) float64 { return float64(p.DeadLettered) }},
}

// WriteSVG draws the result's series, one panel per class.
func (r *Result) WriteSVG(w io.Writer) error {
	var b strings.Builder
	h := len(r.Classes)*(svgPanelHeight+svgMarginTop+svgMarginBelow) + 10
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", svgWidth, h, svgWidth, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgWidth, h)
	for i, c := range r.Classes {
		r.panel(&b, c, i*(svgPanelHeight+svgMarginTop+svgMarginBelow)+svgMarginTop)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Result) panel(b *strings.Builder, c ClassResult, top int) {
	plotW := float64(svgWidth - svgMarginLeft - svgMarginRight)
	x := func(t float64) float64 { return svgMarginLeft + plotW*t/math.Max(r.DurationSeconds, 1) }
	peak := 1.0
	for _, p := range c.Series {
		for _, l := range svgLines {
			peak = math.Max(peak, l.value(p))
		}
	}
	peak = niceCeil(peak)
	y := func(v float64) float64 { return float64(top) + svgPanelHeight*(1-v/peak) }
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", svgMarginLeft, top-10, html.EscapeString(c.Name))
	for _, f := range r.Faults {
		x0, x1 := x(f.AtSeconds), x(math.Min(f.AtSeconds+f.ForSeconds, r.DurationSeconds))
		fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#ffbb78" fill-opacity="0.35"><title>%s</title></rect>`+"\n",
			x0, top, math.Max(x1-x0, 1), svgPanelHeight, html.EscapeString(string(f.Kind)+faultTarget(f)))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.0f" height="%d" fill="none" stroke="#333"/>`+"\n", svgMarginLeft, top, plotW, svgPanelHeight)
	for _, v := range []float64{0, peak / 2, peak} {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", svgMarginLeft-5, y(v)+4, compact(v))
	}
	for _, t := range []float64{0, r.DurationSeconds / 2, r.DurationSeconds} {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(t), top+svgPanelHeight+14, seconds(t))
	}
	for i, l := range svgLines {
		var pts []string
		for _, p := range c.Series {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.T), y(l.value(p))))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", l.colour, strings.Join(pts, " "))
		lx := svgMarginLeft + i*160
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, top+svgPanelHeight+28, lx+20, top+svgPanelHeight+28, l.colour, lx+25, top+svgPanelHeight+32, l.name)
	}
}

// niceCeil rounds a panel's peak up to 1, 2 or 5 × a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// compact writes an axis label: 800, 12k, 1.5M.
func compact(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), ".0") + "M"
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
