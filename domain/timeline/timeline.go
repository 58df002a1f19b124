// Package timeline owns an alert's one timeline (API.md §13), and a case's (§14: the case's own
// activity and comments merged with its alerts' items): every source that touches the alert —
// activity events, agents' findings, people's comments, each provider's enrichment result of its
// indicators, the workflow runs about it and their approval decisions — in one list, oldest first,
// each item {at, kind, actor, summary, ref}. The store reads the sources in one statement; this
// package decides what an item says. REST, MCP and the console call Service.
package timeline

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/store"
)

// MaxSummary is the longest summary, in characters; longer text is cut with "…".
const MaxSummary = 200

// Store is what the timeline reads (implemented by *store.Store).
type Store interface {
	AlertExists(ctx context.Context, id uuid.UUID) error
	AlertTimeline(ctx context.Context, id uuid.UUID, p store.Page) ([]store.TimelineRow, int, error)
	CaseExists(ctx context.Context, id uuid.UUID) error
	CaseTimeline(ctx context.Context, id uuid.UUID, p store.Page) ([]store.TimelineRow, int, error)
}

// Kinds returns every item kind, in the order the API documents them.
func Kinds() []string {
	return []string{store.TimelineActivity, store.TimelineFinding, store.TimelineComment, store.TimelineEnrichment,
		store.TimelineRun, store.TimelineDecision}
}

// Actor is who an item is by: Type is the front door of an activity event (system, api, mcp,
// workflow, console), "agent" for a finding, the door a comment came through, "provider" for an
// enrichment result, "human" or "agent" for a run (its trigger), "human" for an approval decision;
// Name is the key's name (comments), the agent's (findings), the provider's (enrichment), the
// workflow's (runs) or the decider's (decisions).
type Actor struct {
	Type      string  `json:"type"`
	KeyPrefix *string `json:"key_prefix"`
	Name      *string `json:"name"`
}

// Ref is what an item refers to: an activity_event, finding, comment, indicator, workflow_run or
// approval_request, by uuid.
type Ref struct {
	Type string    `json:"type"`
	UUID uuid.UUID `json:"uuid"`
}

// Item is one entry of the timeline. Summary holds text people and agents wrote (comment and finding
// bodies, indicator values): untrusted, shown as text, never as markup.
type Item struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Actor   Actor     `json:"actor"`
	Summary string    `json:"summary"`
	Ref     Ref       `json:"ref"`
}

// Service reads timelines.
type Service struct{ store Store }

// New returns a Service over st.
func New(st Store) *Service { return &Service{store: st} }

// Alert returns one page of alert id's timeline, oldest first, and the number of items. A missing
// alert is store.ErrNotFound.
func (s *Service) Alert(ctx context.Context, id uuid.UUID, p store.Page) ([]Item, int, error) {
	if err := s.store.AlertExists(ctx, id); err != nil {
		return nil, 0, err
	}
	rows, total, err := s.store.AlertTimeline(ctx, id, p)
	if err != nil {
		return nil, 0, err
	}
	return items(rows), total, nil
}

// Case returns one page of case id's timeline (API.md §14): its own activity and comments merged with
// every item of its alerts, oldest first, and the number of items. A missing case is
// store.ErrNotFound.
func (s *Service) Case(ctx context.Context, id uuid.UUID, p store.Page) ([]Item, int, error) {
	if err := s.store.CaseExists(ctx, id); err != nil {
		return nil, 0, err
	}
	rows, total, err := s.store.CaseTimeline(ctx, id, p)
	if err != nil {
		return nil, 0, err
	}
	return items(rows), total, nil
}

func items(rows []store.TimelineRow) []Item {
	out := make([]Item, len(rows))
	for i, r := range rows {
		out[i] = Item{At: r.At.UTC(), Kind: r.Kind, Actor: Actor{Type: r.ActorType, KeyPrefix: r.ActorKeyPrefix, Name: r.ActorName},
			Summary: summarize(r), Ref: Ref{Type: r.RefType, UUID: r.RefUUID}}
	}
	return out
}

// summarize writes an item's one line from the facts its source gave (TimelineRow.Detail).
func summarize(r store.TimelineRow) string {
	var d map[string]any
	if err := json.Unmarshal(r.Detail, &d); err != nil {
		d = map[string]any{}
	}
	str := func(k string) string {
		if v, ok := d[k].(string); ok {
			return v
		}
		return ""
	}
	name := ""
	if r.ActorName != nil {
		name = *r.ActorName
	}
	var s string
	switch r.Kind {
	case store.TimelineComment:
		s = str("body")
		if str("edited_at") != "" {
			s = "(edited) " + s
		}
	case store.TimelineFinding:
		s = str("summary")
		if c := str("confidence"); c != "" {
			s = "[" + c + " confidence] " + s
		}
	case store.TimelineEnrichment:
		s = fmt.Sprintf("%s %s: %s", str("indicator_type"), str("indicator_value"), str("status"))
		if m := str("malice"); m != "" {
			s += ", " + m
		}
		if e := str("error_message"); e != "" {
			s += " (" + e + ")"
		}
	case store.TimelineRun:
		s = fmt.Sprintf("%s on %s %s: %s", name, str("indicator_type"), str("indicator_value"), str("status"))
	case store.TimelineDecision:
		s = fmt.Sprintf("%s %s", str("decision"), str("workflow_name"))
		if c := str("comment"); c != "" {
			s += ": " + c
		}
	default:
		s = activitySummary(str("event_type"), d["references"])
	}
	return cut(oneLine(s))
}

// activitySummary is the event type and the references that say what changed (from → to, the status
// reached, the decision), in a fixed order.
func activitySummary(typ string, refs any) string {
	m, _ := refs.(map[string]any)
	var parts []string
	if from, to := m["from"], m["to"]; from != nil || to != nil {
		parts = append(parts, fmt.Sprintf("%v → %v", orDash(from), orDash(to)))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "status", "decision", "enrichment_status", "malice", "close_classification", "severity":
			parts = append(parts, fmt.Sprintf("%s %v", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return typ
	}
	return typ + ": " + strings.Join(parts, ", ")
}

func orDash(v any) any {
	if v == nil {
		return "—"
	}
	return v
}

// oneLine folds white space runs (new lines included) into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func cut(s string) string {
	if r := []rune(s); len(r) > MaxSummary {
		return string(r[:MaxSummary-1]) + "…"
	}
	return s
}
