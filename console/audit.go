package console

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/store"
)

// auditRow is one audit event as an admin reads it.
type auditRow struct {
	When, Action, ResourceType, ResourceName, Resource string
	Actor, KeyPrefix, KeyName, RequestID, ClientIP     string
	Changes                                            []auditChangeRow
}

type auditChangeRow struct{ Field, From, To string }

var keyPrefixForm = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// parseFormTime reads a datetime-local field (UTC, as the console shows every time) or an RFC 3339
// time; it returns the time and the field's value to show again, ok false when v is neither.
func parseFormTime(v string) (*time.Time, string, bool) {
	if v == "" {
		return nil, "", true
	}
	t, err := time.Parse(formTime, v)
	if err != nil {
		if t, err = time.Parse(time.RFC3339, v); err != nil {
			return nil, "", false
		}
	}
	t = t.UTC()
	return &t, t.Format(formTime), true
}

// auditTrail lists the audit trail (admins only), with the filters of GET /v1/audit-events; a filter
// value that is not valid is ignored and named, as on the other pages.
func (c *Console) auditTrail(ctx *fiber.Ctx) error {
	var ignored []string
	types := known(multi(ctx, "resource_type"), audit.ResourceTypes(), "resource type", &ignored)
	actions := known(multi(ctx, "action"), audit.Actions(), "action", &ignored)
	f := store.AuditFilter{ResourceTypes: types, Actions: actions}
	prefix := ctx.Query("actor_key_prefix")
	if prefix != "" && !keyPrefixForm.MatchString(prefix) {
		prefix, ignored = "", append(ignored, "key prefix")
	}
	f.ActorKeyPrefix = prefix
	var from, to string
	var ok bool
	if f.From, from, ok = parseFormTime(strings.TrimSpace(ctx.Query("from_time"))); !ok {
		ignored = append(ignored, "from")
	}
	if f.To, to, ok = parseFormTime(strings.TrimSpace(ctx.Query("to_time"))); !ok {
		ignored = append(ignored, "to")
	}
	pageNo, _ := strconv.Atoi(ctx.Query("page"))
	pageNo = max(1, min(pageNo, 1_000_000))
	f.Page = store.Page{Number: pageNo, Size: queuePageSize}
	events, total, err := c.deps.Store.ListAuditEvents(ctx.UserContext(), f)
	if err != nil {
		return err
	}
	rows := make([]auditRow, len(events))
	for i, e := range events {
		rows[i] = toAuditRow(e)
	}
	pages := int(math.Ceil(float64(total) / queuePageSize))
	link := func(n int) string {
		v := url.Values{"page": {strconv.Itoa(n)}}
		for _, s := range types {
			v.Add("resource_type", s)
		}
		for _, s := range actions {
			v.Add("action", s)
		}
		for name, s := range map[string]string{"actor_key_prefix": prefix, "from_time": from, "to_time": to} {
			if s != "" {
				v.Set(name, s)
			}
		}
		return "/console/audit?" + v.Encode()
	}
	data := struct {
		page
		Types, Actions, AllTypes, AllActions []string
		Prefix, From, To                     string
		Ignored                              []string
		Rows                                 []auditRow
		Total, Page, Pages                   int
		Prev, Next                           string
	}{page: c.base(ctx, "Audit trail", ""), Types: types, Actions: actions, AllTypes: audit.ResourceTypes(), AllActions: audit.Actions(),
		Prefix: prefix, From: from, To: to, Ignored: ignored, Rows: rows, Total: total, Page: pageNo, Pages: pages}
	if pageNo > 1 {
		data.Prev = link(pageNo - 1)
	}
	if pageNo < pages {
		data.Next = link(pageNo + 1)
	}
	return c.render(ctx, http.StatusOK, "audit", data)
}

func toAuditRow(e store.AuditEvent) auditRow {
	r := auditRow{When: e.CreatedAt.UTC().Format("2006-01-02 15:04:05Z"), Action: e.Action, ResourceType: e.ResourceType,
		ResourceName: e.ResourceName, Actor: e.ActorType, KeyPrefix: deref(e.ActorKeyPrefix), KeyName: deref(e.ActorKeyName),
		RequestID: deref(e.RequestID), ClientIP: deref(e.ClientIP)}
	if e.ResourceUUID != nil {
		r.Resource = e.ResourceUUID.String()
	}
	fields := make([]string, 0, len(e.Changes))
	for k := range e.Changes {
		fields = append(fields, k)
	}
	slices.Sort(fields)
	for _, k := range fields {
		ch := e.Changes[k]
		r.Changes = append(r.Changes, auditChangeRow{Field: k, From: shownValue(ch.From), To: shownValue(ch.To)})
	}
	return r
}

// shownValue is a changed value as text (JSON, cut), for the page to escape.
func shownValue(v any) string {
	if v == nil {
		return "—"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	s := string(raw)
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}
