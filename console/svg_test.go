package console

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

func TestCharts(t *testing.T) {
	require.Equal(t, 1, niceCeil(0))
	require.Equal(t, 1, niceCeil(1))
	require.Equal(t, 5, niceCeil(3))
	require.Equal(t, 200, niceCeil(101))
	require.Equal(t, 1000, niceCeil(1000))

	require.Equal(t, []int{0, 1}, valueTicks(1))
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, valueTicks(5))
	require.Equal(t, []int{0, 4, 8, 12, 16, 20}, valueTicks(20))
	require.Equal(t, []int{0, 20, 40, 60, 80, 100}, valueTicks(100))

	empty := columnChart("x", "t", nil, "day")
	require.True(t, empty.Empty)
	require.Empty(t, empty.Bars)
	zero := rowChart("y", "t", []chartItem{{Label: "a"}, {Label: "b"}})
	require.True(t, zero.Empty)
	for _, b := range zero.Bars {
		require.Zero(t, b.W)
	}

	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var buckets []store.TimeBucket
	for i := range 30 {
		buckets = append(buckets, store.TimeBucket{Start: start.AddDate(0, 0, i), Count: i * 7})
	}
	c := columnChart("x", "t", buckets, "day")
	require.Len(t, c.Bars, 30)
	top := c.Bars[29]
	require.Equal(t, c.PlotY+c.PlotH, top.Y+top.H, "bars stand on the axis")
	require.LessOrEqual(t, top.H, c.PlotH)
	require.GreaterOrEqual(t, top.Y, c.PlotY)
	require.LessOrEqual(t, len(c.Labels), 10)
	require.True(t, strings.HasPrefix(c.Bars[3].Title, "2026-11-04"))

	long := rowChart("y", "t", []chartItem{{Label: strings.Repeat("r", 100), Value: 3}, {Label: "b", Value: 1}})
	require.Equal(t, long.PlotW*3/5, long.Bars[0].W)
	require.LessOrEqual(t, len([]rune(long.Labels[0].Label)), 40)
}

// One Critical beside thousands of Medium still draws a bar to see; a zero draws none.
func TestRowChartSmallValueVisible(t *testing.T) {
	c := rowChart("sev", "Open alerts by severity", []chartItem{{Label: "Critical", Value: 1, Class: "sev-Critical"},
		{Label: "Medium", Value: 5000, Class: "sev-Medium"}, {Label: "Low", Value: 0, Class: "sev-Low"}})
	require.GreaterOrEqual(t, c.Bars[0].W, minBar, "the Critical bar is visible")
	require.Equal(t, c.PlotW, c.Bars[1].W, "the largest fills the axis")
	require.Zero(t, c.Bars[2].W)
	require.Equal(t, "Critical (1)", c.Labels[0].Label, "the count is written beside it, not only drawn")
}

// Every level reads differently without colour: the severity and malice badges carry their name
// as text, and the stylesheet gives each level its own colour and each a shape of its own.
func TestPalettesDistinct(t *testing.T) {
	css := string(stylesheet)
	seen := map[string]string{}
	for _, class := range []string{"sev-Critical", "sev-High", "sev-Medium", "sev-Low", "sev-Informational", "sev-Pending",
		"mal-Malicious", "mal-Suspicious", "mal-Benign", "mal-Pending"} {
		i := strings.Index(css, "."+class+"{background:")
		require.GreaterOrEqual(t, i, 0, class)
		bg := css[i+len(class)+2 : i+len(class)+2+strings.Index(css[i+len(class)+2:], ";")]
		if other, dup := seen[bg]; dup && (strings.HasPrefix(other, "sev") == strings.HasPrefix(class, "sev")) && bg != "background:#fff" {
			t.Fatalf("%s and %s share %s", class, other, bg)
		}
		seen[bg] = class
	}
	for _, class := range []string{"sev-Critical", "sev-High", "sev-Medium", "sev-Low", "sev-Informational", "mal-Malicious", "mal-Suspicious", "mal-Benign"} {
		require.Contains(t, css, ".badge."+class+"::before{content:", "%s has a shape", class)
	}
}
