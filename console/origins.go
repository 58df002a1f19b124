package console

import (
	"context"
	"net/http"
	"strconv"

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

// formIndicator reads the form's alert (path) and indicator (by uuid, among the alert's own, so a form
// can name only a value the alert carries). done true means the page was answered: not found, a
// refusal or an error.
func (c *Console) formIndicator(ctx *fiber.Ctx) (uuid.UUID, store.Indicator, bool, error) {
	alert, ok := formUUID(ctx)
	if !ok {
		return uuid.Nil, store.Indicator{}, true, c.notFound(ctx, "alert")
	}
	id, err := uuid.Parse(ctx.FormValue("indicator"))
	if err == nil {
		inds, err := c.deps.Store.AlertIndicators(ctx.UserContext(), alert)
		if err != nil {
			return alert, store.Indicator{}, true, c.alertAction(ctx, alert, err, "")
		}
		for _, ind := range inds {
			if ind.UUID == id {
				return alert, ind, false, nil
			}
		}
	}
	return alert, store.Indicator{}, true, c.alertPageWith(ctx, http.StatusUnprocessableEntity, "That indicator is not on this alert.", "")
}

// neverIndicator puts one of the alert's indicator values on the never-indicator list through its
// owner (config.Exclusions.Add, audited), then shows the page with a status line.
func (c *Console) neverIndicator(ctx *fiber.Ctx) error {
	id, ind, done, err := c.formIndicator(ctx)
	if done {
		return err
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

// mapField creates, through the owner (config.FromOrigin, config.Mappings), the raw_payload mapping
// that makes a pass-4 origin of one of the alert's indicators a mapped field of the alert's source,
// then shows the page with a status line. An identical mapping is the owner's conflict.
func (c *Console) mapField(ctx *fiber.Ctx) error {
	id, ind, done, err := c.formIndicator(ctx)
	if done {
		return err
	}
	a, err := c.deps.Store.GetAlert(ctx.UserContext(), id)
	if err != nil {
		return c.alertAction(ctx, id, err, "")
	}
	f, err := config.FromOrigin(a.SourceName, ind, ctx.FormValue("path"), "Added from the console's page of alert "+id.String()+".")
	if err != nil {
		return c.alertPageWith(ctx, http.StatusUnprocessableEntity, "That is not a path where pass 4 found this indicator.", "")
	}
	if _, err := c.deps.Mappings.Create(ctx.UserContext(), c.actor(ctx, whoOf(ctx).p), f); err != nil {
		return c.alertAction(ctx, id, err, "")
	}
	return c.alertPageWith(ctx, http.StatusOK, "", "Mapped "+f.FieldPath+" of "+a.SourceName+"'s raw payload as "+ind.Type+
		": later "+a.SourceName+" alerts take it through this mapping.")
}
