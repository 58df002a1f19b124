package console

import (
	"math"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/store"
)

// Relationship graph geometry (SVG user units).
const (
	graphW, graphH   = 760, 560
	graphCX, graphCY = graphW / 2, graphH / 2
	ringIndicators   = 140.0
	ringAlerts       = 245.0
	maxGraphInds     = 24
)

type graphNode struct {
	X, Y          int
	Label, Title  string // Label is cut to fit; Title is the whole text (tooltip)
	Class, Link   string
	LabelAnchor   string // start, middle or end
	LabelX        int
	LabelY        int
	IsAlert, Root bool
}

type graphEdge struct{ X1, Y1, X2, Y2 int }

// graph is the alert, its indicators on a ring around it, and the other alerts sharing each indicator
// on an outer ring; an alert sharing several indicators is drawn once with an edge to each.
type graph struct {
	W, H        int
	Nodes       []graphNode
	Edges       []graphEdge
	More        int // indicators left out (beyond maxGraphInds)
	Related     int // distinct other alerts drawn
	Empty       bool
	Description string
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func polar(r, angle float64) (int, int) {
	return graphCX + int(math.Round(r*math.Cos(angle))), graphCY + int(math.Round(r*math.Sin(angle)))
}

// anchor places a label outside its node, on the side away from the centre.
func anchor(n *graphNode, angle float64) {
	cos := math.Cos(angle)
	switch {
	case cos > 0.3:
		n.LabelAnchor, n.LabelX = "start", n.X+10
	case cos < -0.3:
		n.LabelAnchor, n.LabelX = "end", n.X-10
	default:
		n.LabelAnchor, n.LabelX = "middle", n.X
	}
	n.LabelY = n.Y + 4
	if math.Sin(angle) > 0.7 {
		n.LabelY = n.Y + 20
	} else if math.Sin(angle) < -0.7 {
		n.LabelY = n.Y - 12
	}
}

func layoutGraph(a store.Alert, inds []store.Indicator, sibs []store.Sibling) graph {
	g := graph{W: graphW, H: graphH}
	root := graphNode{X: graphCX, Y: graphCY, Label: cut(a.Title, 28), Title: a.Title, Class: "n-root sev-" + a.Severity, IsAlert: true, Root: true,
		LabelAnchor: "middle", LabelX: graphCX, LabelY: graphCY + 30}
	if len(inds) > maxGraphInds {
		g.More = len(inds) - maxGraphInds
		inds = inds[:maxGraphInds]
	}
	byInd := map[uuid.UUID][]store.Sibling{}
	for _, s := range sibs {
		byInd[s.IndicatorUUID] = append(byInd[s.IndicatorUUID], s)
	}
	placed := map[uuid.UUID][2]int{}
	var alertNodes []graphNode
	step := 2 * math.Pi / float64(max(len(inds), 1))
	for i, ind := range inds {
		angle := -math.Pi/2 + float64(i)*step
		x, y := polar(ringIndicators, angle)
		n := graphNode{X: x, Y: y, Label: cut(ind.Value, 26), Title: ind.Type + " " + ind.Value, Class: "n-ind mal-" + ind.Malice}
		anchor(&n, angle)
		g.Edges = append(g.Edges, graphEdge{graphCX, graphCY, x, y})
		g.Nodes = append(g.Nodes, n)
		rel := byInd[ind.UUID]
		for j, s := range rel {
			if p, ok := placed[s.AlertUUID]; ok {
				g.Edges = append(g.Edges, graphEdge{x, y, p[0], p[1]})
				continue
			}
			// fan the indicator's alerts out over its share of the outer ring
			spread := step * 0.8
			a := angle
			if len(rel) > 1 {
				a = angle - spread/2 + spread*float64(j)/float64(len(rel)-1)
			}
			ax, ay := polar(ringAlerts, a)
			an := graphNode{X: ax, Y: ay, Label: cut(s.Title, 22), Title: s.Title + " (" + s.Status + ")", Class: "n-alert sev-" + s.Severity,
				Link: "/console/alerts/" + s.AlertUUID.String(), IsAlert: true}
			anchor(&an, a)
			placed[s.AlertUUID] = [2]int{ax, ay}
			alertNodes = append(alertNodes, an)
			g.Edges = append(g.Edges, graphEdge{x, y, ax, ay})
		}
	}
	g.Nodes = append(append(g.Nodes, alertNodes...), root)
	g.Related = len(placed)
	g.Empty = len(inds) == 0
	return g
}
