// Package cwdashboard is a typed model of a CloudWatch dashboard body (the DashboardBody JSON
// of PutDashboard and aws_cloudwatch_dashboard), as AWS documents it in "Dashboard Body
// Structure and Syntax". It holds only what fleetc's generated dashboard uses: metric and
// text widgets on the 24-column grid. Marshalled with encoding/json, field order is the
// struct order and every collection is a slice, so the same dashboard gives the same bytes.
package cwdashboard

import (
	"encoding/json"
	"fmt"
)

// Grid limits from the body syntax: the grid is 24 units wide, a widget 1..24 wide and
// 1..1000 high, a body at most 500 widgets.
const (
	GridWidth  = 24
	MaxHeight  = 1000
	MaxWidgets = 500
)

// Body is the whole dashboard.
type Body struct {
	Start          string   `json:"start,omitempty"`          // e.g. -PT3H
	PeriodOverride string   `json:"periodOverride,omitempty"` // auto | inherit
	Widgets        []Widget `json:"widgets"`
}

// WidgetType is a widget's "type".
type WidgetType string

const (
	TypeMetric WidgetType = "metric"
	TypeText   WidgetType = "text"
)

// Widget is one placed widget; Properties is *MetricProperties or *TextProperties.
type Widget struct {
	Type       WidgetType `json:"type"`
	X          int        `json:"x"`
	Y          int        `json:"y"`
	Width      int        `json:"width"`
	Height     int        `json:"height"`
	Properties any        `json:"properties"`
}

// View is how a metric widget draws.
type View string

const (
	ViewTimeSeries  View = "timeSeries"
	ViewSingleValue View = "singleValue"
)

// MetricProperties are a metric widget's properties.
type MetricProperties struct {
	Title   string   `json:"title,omitempty"`
	View    View     `json:"view,omitempty"`
	Stacked bool     `json:"stacked"`
	Region  string   `json:"region"`
	Stat    string   `json:"stat,omitempty"`
	Period  int      `json:"period,omitempty"` // seconds
	Metrics []Metric `json:"metrics"`
	YAxis   *YAxes   `json:"yAxis,omitempty"`
}

// YAxes bounds the widget's axes.
type YAxes struct {
	Left *YAxis `json:"left,omitempty"`
}

// YAxis is one axis.
type YAxis struct {
	Min   *float64 `json:"min,omitempty"`
	Label string   `json:"label,omitempty"`
}

// TextProperties are a text widget's properties.
type TextProperties struct {
	Markdown   string `json:"markdown"`
	Background string `json:"background,omitempty"` // solid | transparent
}

// Dim is one metric dimension.
type Dim struct{ Name, Value string }

// Metric is one line of a metric widget. It marshals as the documented array form
// [Namespace, MetricName, DimName, DimValue, ..., {rendering properties}].
type Metric struct {
	Namespace, Name string
	Dims            []Dim
	Render          *Render // nil: no rendering properties
}

// Render is a metric's rendering properties (the array's trailing object).
type Render struct {
	Label string `json:"label,omitempty"`
	Stat  string `json:"stat,omitempty"`
	ID    string `json:"id,omitempty"`
}

// MarshalJSON writes the array form.
func (m Metric) MarshalJSON() ([]byte, error) {
	out := []any{m.Namespace, m.Name}
	for _, d := range m.Dims {
		out = append(out, d.Name, d.Value)
	}
	if m.Render != nil {
		out = append(out, m.Render)
	}
	return json.Marshal(out)
}

// Layout places widgets left to right, top to bottom on the 24-unit grid: a widget that does
// not fit the current row starts the next one.
type Layout struct {
	x, y, rowHeight int
	widgets         []Widget
}

// Add places a widget of the given size.
func (l *Layout) Add(t WidgetType, width, height int, props any) {
	if l.x+width > GridWidth {
		l.Break()
	}
	l.widgets = append(l.widgets, Widget{Type: t, X: l.x, Y: l.y, Width: width, Height: height, Properties: props})
	l.x += width
	l.rowHeight = max(l.rowHeight, height)
}

// Break ends the current row.
func (l *Layout) Break() {
	if l.x == 0 {
		return
	}
	l.x, l.y, l.rowHeight = 0, l.y+l.rowHeight, 0
}

// Widgets is every placed widget, in placement order.
func (l *Layout) Widgets() []Widget { return l.widgets }

// Check reports the structural limits the schema cannot see across widgets: the widget count
// and every widget inside the grid.
func (b Body) Check() error {
	if len(b.Widgets) > MaxWidgets {
		return fmt.Errorf("dashboard has %d widgets; CloudWatch allows %d", len(b.Widgets), MaxWidgets)
	}
	for i, w := range b.Widgets {
		if w.X+w.Width > GridWidth {
			return fmt.Errorf("widget %d ends at column %d, past the %d-column grid", i, w.X+w.Width, GridWidth)
		}
	}
	return nil
}
