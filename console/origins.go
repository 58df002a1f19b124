package console

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/store"
)

// ExclusionService adds a value to the never-indicator list (config.Exclusions).
type ExclusionService interface {
	Add(ctx context.Context, actor store.Actor, entry string) (store.ExtractionExclusions, bool, error)
}

// MappingService creates an indicator mapping (config.Mappings).
type MappingService interface {
	Create(ctx context.Context, actor store.Actor, f config.MappingFields) (store.IndicatorMapping, error)
}

// originRow is one place extraction found an indicator for the alert: "pass 4 · result._raw". Path is
// set for a pass-4 origin: the raw payload path "Map this field" generalises into a mapping.
type originRow struct {
	Label, Path string
}

// origins labels an indicator's extracted_by for the alert page (nil for a link made before
// extraction recorded it, or an analyst's add).
func origins(by []indicators.Origin) []originRow {
	out := make([]originRow, 0, len(by))
	for _, o := range by {
		r := originRow{Label: "pass " + strconv.Itoa(o.Pass) + " · " + o.FieldPath}
		switch {
		case o.Pass == 1:
			r.Label = "pass 1 · the source plugin"
		case o.FieldPath == "":
			r.Label = "pass " + strconv.Itoa(o.Pass)
		case o.Pass == 4:
			r.Path = o.FieldPath
		}
		out = append(out, r)
	}
	return out
}

// excludable reports whether value may go on the never-indicator list (a host name, a domain, an IP
// address: config.Check accepts it), so the page offers "Never an indicator" only where it can work.
func excludable(value string) bool {
	_, err := config.Check([]string{value})
	return err == nil
}

// mappingPath is a pass-4 path as an indicator mapping's field path: array indexes become `*`, so
// the mapping finds the field in every element (evidence.0.ipAddress → evidence.*.ipAddress).
func mappingPath(path string) string {
	segs := strings.Split(path, ".")
	for i, s := range segs {
		if _, err := strconv.Atoi(s); err == nil && s != "" && s[0] != '-' && s[0] != '+' {
			segs[i] = "*"
		}
	}
	return strings.Join(segs, ".")
}

// alertIndicator is the indicator the form names (by uuid) among the alert's own, so a form can name
// only a value the alert carries; ok false answers the page with a refusal.
func (c *Console) alertIndicator(ctx *fiber.Ctx, alert uuid.UUID) (store.Indicator, bool, error) {
	id, err := uuid.Parse(ctx.FormValue("indicator"))
	if err != nil {
		return store.Indicator{}, false, nil
	}
	inds, err := c.deps.Store.AlertIndicators(ctx.UserContext(), alert)
	if err != nil {
		return store.Indicator{}, false, err
	}
	for _, ind := range inds {
		if ind.UUID == id {
			return ind, true, nil
		}
	}
	return store.Indicator{}, false, nil
}

const notOnAlert = "That indicator is not on this alert."

// neverIndicator puts one of the alert's indicator values on the never-indicator list through its
// owner (config.Exclusions.Add, audited), then shows the page with a status line.
func (c *Console) neverIndicator(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "alert")
	}
	ind, ok, err := c.alertIndicator(ctx, id)
	switch {
	case err != nil:
		return c.alertAction(ctx, id, err, "")
	case !ok:
		return c.alertPageWith(ctx, http.StatusUnprocessableEntity, notOnAlert, "")
	}
	_, added, err := c.deps.Exclusions.Add(ctx.UserContext(), c.actor(ctx, whoOf(ctx).p), ind.Value)
	if err != nil {
		return c.alertAction(ctx, id, err, "")
	}
	notice := ind.Value + " is on the never-indicator list now: extraction skips it in later alerts."
	if !added {
		notice = ind.Value + " was already on the never-indicator list."
	}
	return c.alertPageWith(ctx, http.StatusOK, "", notice)
}

// mapField creates a raw_payload indicator mapping for the alert's source from a pass-4 origin of
// one of its indicators (its path with array indexes as `*`) through the owner (config.Mappings),
// then shows the page with a status line. An identical mapping is the owner's conflict.
func (c *Console) mapField(ctx *fiber.Ctx) error {
	id, ok := formUUID(ctx)
	if !ok {
		return c.notFound(ctx, "alert")
	}
	ind, ok, err := c.alertIndicator(ctx, id)
	switch {
	case err != nil:
		return c.alertAction(ctx, id, err, "")
	case !ok:
		return c.alertPageWith(ctx, http.StatusUnprocessableEntity, notOnAlert, "")
	}
	path := ctx.FormValue("path")
	found := false
	for _, o := range ind.ExtractedBy {
		found = found || o.Pass == 4 && o.FieldPath == path && path != ""
	}
	if !found {
		return c.alertPageWith(ctx, http.StatusUnprocessableEntity, "That is not a path where pass 4 found this indicator.", "")
	}
	a, err := c.deps.Store.GetAlert(ctx.UserContext(), id)
	if err != nil {
		return c.alertAction(ctx, id, err, "")
	}
	source, field := a.SourceName, mappingPath(path)
	desc := "Added from the console's page of alert " + id.String() + "."
	_, err = c.deps.Mappings.Create(ctx.UserContext(), c.actor(ctx, whoOf(ctx).p), config.MappingFields{SourceName: &source,
		FieldPath: field, IndicatorType: ind.Type, ExtractionTarget: string(indicators.TargetRawPayload), Description: &desc})
	if err != nil {
		return c.alertAction(ctx, id, err, "")
	}
	return c.alertPageWith(ctx, http.StatusOK, "", "Mapped "+field+" of "+source+"'s raw payload as "+ind.Type+
		": later "+source+" alerts take it through this mapping.")
}
