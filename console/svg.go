package console

import (
	"math"
	"strconv"
	"time"

	"github.com/vigil-soc/vigil/store"
)

// chart is a bar chart drawn server-side as SVG by the "chart" template: no script, no library.
// Coordinates are SVG user units; every number is an int, so no NaN or Inf reaches an attribute.
type chart struct {
	ID, Title    string
	W, H         int
	Horizontal   bool
	Bars         []chartBar
	Ticks        []chartTick // value axis
	Labels       []chartTick // category axis (a subset when there are many bars)
	Empty        bool
	PlotX, PlotY int // plot area origin (top left)
	PlotW, PlotH int
}

type chartBar struct {
	X, Y, W, H int
	Title      string // tooltip: "label: value"
	Class      string
}

type chartTick struct {
	X, Y  int
	Label string
}

type chartItem struct {
	Label string
	Value int
	Class string
}

// niceCeil rounds max up to 1, 2 or 5 × 10^k, so axis ticks fall on round numbers.
func niceCeil(v int) int {
	if v <= 0 {
		return 1
	}
	p := int(math.Pow(10, math.Floor(math.Log10(float64(v)))))
	for _, m := range []int{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// valueTicks are the axis values 0..top in even steps (top is niceCeil's: 1, 2 or 5 × 10^k).
func valueTicks(top int) []int {
	step := 1
	switch {
	case top >= 5 && top%5 == 0:
		step = top / 5
	case top >= 4 && top%4 == 0:
		step = top / 4
	}
	var out []int
	for v := 0; v <= top; v += step {
		out = append(out, v)
	}
	return out
}

// columnChart draws a time series (one column per bucket), labelling about eight of them.
func columnChart(id, title string, buckets []store.TimeBucket, bucket string) chart {
	c := chart{ID: id, Title: title, W: 720, H: 240, PlotX: 44, PlotY: 12, PlotW: 660, PlotH: 190}
	maxV := 0
	for _, b := range buckets {
		maxV = max(maxV, b.Count)
	}
	c.Empty = len(buckets) == 0
	top := niceCeil(maxV)
	for _, v := range valueTicks(top) {
		c.Ticks = append(c.Ticks, chartTick{X: c.PlotX - 6, Y: c.PlotY + c.PlotH - v*c.PlotH/top, Label: strconv.Itoa(v)})
	}
	if c.Empty {
		return c
	}
	slot := c.PlotW / len(buckets)
	width := max(1, slot*8/10)
	layout := "01-02"
	if bucket == "hour" {
		layout = "15:04"
	}
	every := max(1, len(buckets)/8)
	for i, b := range buckets {
		h := b.Count * c.PlotH / top
		x := c.PlotX + i*slot + (slot-width)/2
		c.Bars = append(c.Bars, chartBar{X: x, Y: c.PlotY + c.PlotH - h, W: width, H: h,
			Title: b.Start.UTC().Format(time.DateOnly+" 15:04") + ": " + strconv.Itoa(b.Count), Class: "bar"})
		if i%every == 0 {
			c.Labels = append(c.Labels, chartTick{X: x + width/2, Y: c.PlotY + c.PlotH + 16, Label: b.Start.UTC().Format(layout)})
		}
	}
	return c
}

// minBar is the least width of a bar with a value above zero (a count far below the largest would
// round to no width at all).
const minBar = 4

// rowChart draws one horizontal bar per item, labelled on the left (with its count).
func rowChart(id, title string, items []chartItem) chart {
	const rowH = 26
	c := chart{ID: id, Title: title, W: 720, Horizontal: true, PlotX: 190, PlotY: 8, PlotW: 480}
	c.PlotH = max(1, len(items)) * rowH
	c.H = c.PlotH + 34
	maxV := 0
	for _, it := range items {
		maxV = max(maxV, it.Value)
	}
	c.Empty = maxV == 0
	top := niceCeil(maxV)
	for _, v := range valueTicks(top) {
		c.Ticks = append(c.Ticks, chartTick{X: c.PlotX + v*c.PlotW/top, Y: c.PlotY + c.PlotH + 16, Label: strconv.Itoa(v)})
	}
	for i, it := range items {
		y := c.PlotY + i*rowH + 4
		w := it.Value * c.PlotW / top
		if it.Value > 0 {
			w = max(w, minBar) // one Critical beside 5 000 Medium is still seen
		}
		c.Bars = append(c.Bars, chartBar{X: c.PlotX, Y: y, W: w, H: rowH - 8,
			Title: it.Label + ": " + strconv.Itoa(it.Value), Class: "bar " + it.Class})
		c.Labels = append(c.Labels, chartTick{X: c.PlotX - 8, Y: y + rowH/2, Label: cut(it.Label, 28) + " (" + strconv.Itoa(it.Value) + ")"})
	}
	return c
}
