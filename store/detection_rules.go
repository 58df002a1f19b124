package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// DetectionRule is a SIEM rule alerts are attributed to (SEED-SPEC §2.3). A stub rule is created by
// the pipeline for an unknown source reference (name = reference) until someone documents it.
type DetectionRule struct {
	bun.BaseModel `bun:"table:detection_rules"`

	ID                 int64     `bun:"id,pk,autoincrement"`
	UUID               uuid.UUID `bun:"uuid,type:uuid"`
	Name               string    `bun:"name"`
	SourceRuleID       *string   `bun:"source_rule_id"`
	SourceName         *string   `bun:"source_name"`
	Severity           *string   `bun:"severity"`
	IsActive           bool      `bun:"is_active"`
	IsStub             bool      `bun:"is_stub"`
	MitreTactics       []string  `bun:"mitre_tactics,array"`
	MitreTechniques    []string  `bun:"mitre_techniques,array"`
	MitreSubtechniques []string  `bun:"mitre_subtechniques,array"`
	DataSources        []string  `bun:"data_sources,array"`
	RunFrequency       *string   `bun:"run_frequency"`
	CreatedBy          *string   `bun:"created_by"`
	Documentation      *string   `bun:"documentation"`
	CreatedAt          time.Time `bun:"created_at"`
	UpdatedAt          time.Time `bun:"updated_at"`
}

// ErrDuplicateRule is returned (wrapping ErrConflict) when a non-stub rule already holds the
// (source_name, source_rule_id) pair.
var ErrDuplicateRule = fmt.Errorf("%w: detection rule with this source reference exists", ErrConflict)

// DuplicateRuleError names the rule that already holds a source reference.
type DuplicateRuleError struct {
	Existing uuid.UUID
}

func (e *DuplicateRuleError) Error() string {
	return fmt.Sprintf("detection rule %s already has this source_name and source_rule_id", e.Existing)
}

// Unwrap makes errors.Is(err, ErrDuplicateRule) and errors.Is(err, ErrConflict) hold.
func (e *DuplicateRuleError) Unwrap() error { return ErrDuplicateRule }

const ruleSourceRefConstraint = "detection_rules_source_ref_key"

func (r *DetectionRule) fillLists() {
	for _, l := range []*[]string{&r.MitreTactics, &r.MitreTechniques, &r.MitreSubtechniques, &r.DataSources} {
		if *l == nil {
			*l = []string{}
		}
	}
}

// CreateDetectionRule inserts r, filling ID, UUID and timestamps. When a stub rule (created by the
// pipeline for an unknown reference) holds r's (source_name, source_rule_id), the stub is adopted:
// it takes r's fields, stops being a stub, keeps its uuid and alerts, and r describes it afterwards
// (adopted = true). A non-stub holder yields a *DuplicateRuleError.
func (s *Store) CreateDetectionRule(ctx context.Context, r *DetectionRule) (adopted bool, err error) {
	r.fillLists()
	r.IsStub = false
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		now := s.Now()
		r.UpdatedAt = now
		if r.SourceName != nil && r.SourceRuleID != nil {
			var existing DetectionRule
			err := tx.NewSelect().Model(&existing).
				Where("source_name = ? AND source_rule_id = ?", *r.SourceName, *r.SourceRuleID).
				For("UPDATE").Scan(ctx)
			switch {
			case err == nil && !existing.IsStub:
				return &DuplicateRuleError{Existing: existing.UUID}
			case err == nil:
				r.ID, r.UUID, r.CreatedAt = existing.ID, existing.UUID, existing.CreatedAt
				if _, err := tx.NewUpdate().Model(r).ExcludeColumn("id", "uuid", "created_at").WherePK().Exec(ctx); err != nil {
					return fmt.Errorf("adopt stub rule %s: %w", r.UUID, mapErr(err))
				}
				adopted = true
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("look up rule by source reference: %w", mapErr(err))
			}
		}
		if r.UUID == uuid.Nil {
			r.UUID = uuid.New()
		}
		r.CreatedAt = now
		if _, err := tx.NewInsert().Model(r).Returning("id").Exec(ctx); err != nil {
			return s.ruleWriteErr(ctx, r, err)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("create detection rule: %w", err)
	}
	return adopted, nil
}

// ruleWriteErr turns a unique violation on the source reference into a *DuplicateRuleError.
func (s *Store) ruleWriteErr(ctx context.Context, r *DetectionRule, err error) error {
	if IsUniqueViolation(err, ruleSourceRefConstraint) && r.SourceName != nil && r.SourceRuleID != nil {
		var id uuid.UUID
		if e := s.db.NewSelect().Model((*DetectionRule)(nil)).Column("uuid").
			Where("source_name = ? AND source_rule_id = ?", *r.SourceName, *r.SourceRuleID).Scan(ctx, &id); e == nil {
			return &DuplicateRuleError{Existing: id}
		}
		return ErrDuplicateRule
	}
	return mapErr(err)
}

// GetDetectionRule loads one rule by uuid.
func (s *Store) GetDetectionRule(ctx context.Context, id uuid.UUID) (DetectionRule, error) {
	var r DetectionRule
	if err := s.db.NewSelect().Model(&r).Where("uuid = ?", id).Scan(ctx); err != nil {
		return DetectionRule{}, fmt.Errorf("get detection rule %s: %w", id, mapErr(err))
	}
	r.fillLists()
	return r, nil
}

// GetDetectionRuleByID loads one rule by its internal id (an alert's detection_rule_id).
func (s *Store) GetDetectionRuleByID(ctx context.Context, id int64) (DetectionRule, error) {
	rules, err := s.detectionRulesByID(ctx, []int64{id})
	if err != nil {
		return DetectionRule{}, err
	}
	r, ok := rules[id]
	if !ok {
		return DetectionRule{}, fmt.Errorf("get detection rule #%d: %w", id, ErrNotFound)
	}
	return r, nil
}

// detectionRulesByID loads the rules of ids (alerts' detection_rule_id) in one statement, by id; a
// rule that is gone is absent.
func (s *Store) detectionRulesByID(ctx context.Context, ids []int64) (map[int64]DetectionRule, error) {
	out := make(map[int64]DetectionRule, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rs []DetectionRule
	if err := s.db.NewSelect().Model(&rs).Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("get %d detection rules: %w", len(ids), mapErr(err))
	}
	for _, r := range rs {
		r.fillLists()
		out[r.ID] = r
	}
	return out, nil
}

// Sort columns of ListDetectionRules.
const (
	RuleSortName       = "name"
	RuleSortSourceName = "source_name"
	RuleSortSeverity   = "severity"
	RuleSortCreatedAt  = "created_at"
)

// DetectionRuleFilter narrows ListDetectionRules. Empty fields do not filter.
type DetectionRuleFilter struct {
	SourceName     *string  // exact
	Severities     []string // any of
	IsActive       *bool
	Q              string // case-insensitive substring of the name
	MitreTactic    string // exact element of mitre_tactics
	MitreTechnique string // exact element of mitre_techniques or mitre_subtechniques
	SortBy         string // RuleSort*; default created_at
	Desc           bool
	Page           Page
}

// severityRankSQL orders severities by rank (Pending 0 … Critical 5).
const severityRankSQL = `CASE %s WHEN 'Pending' THEN 0 WHEN 'Informational' THEN 1 WHEN 'Low' THEN 2 ` +
	`WHEN 'Medium' THEN 3 WHEN 'High' THEN 4 WHEN 'Critical' THEN 5 END`

// ListDetectionRules returns one page of rules and the total matching f.
func (s *Store) ListDetectionRules(ctx context.Context, f DetectionRuleFilter) ([]DetectionRule, int, error) {
	var rules []DetectionRule
	q := s.db.NewSelect().Model(&rules)
	if f.SourceName != nil {
		q = q.Where("source_name = ?", *f.SourceName)
	}
	if len(f.Severities) > 0 {
		q = q.Where("severity IN (?)", bun.List(f.Severities))
	}
	if f.IsActive != nil {
		q = q.Where("is_active = ?", *f.IsActive)
	}
	if f.Q != "" {
		q = q.Where("name ILIKE ?", likeContains(f.Q))
	}
	if f.MitreTactic != "" {
		q = q.Where("mitre_tactics @> ARRAY[?]::text[]", f.MitreTactic)
	}
	if f.MitreTechnique != "" {
		q = q.Where("(mitre_techniques @> ARRAY[?]::text[] OR mitre_subtechniques @> ARRAY[?]::text[])", f.MitreTechnique, f.MitreTechnique)
	}
	dir := "ASC"
	if f.Desc {
		dir = "DESC"
	}
	switch f.SortBy {
	case RuleSortName:
		q = q.OrderExpr("lower(name) " + dir + ", id " + dir)
	case RuleSortSourceName:
		q = q.OrderExpr("source_name " + dir + " NULLS LAST, lower(name), id")
	case RuleSortSeverity:
		q = q.OrderExpr(fmt.Sprintf(severityRankSQL, "severity") + " " + dir + " NULLS LAST, lower(name), id")
	default:
		q = q.OrderExpr("created_at " + dir + ", id " + dir)
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list detection rules: %w", mapErr(err))
	}
	for i := range rules {
		rules[i].fillLists()
	}
	return rules, int(total), nil
}

// UpdateDetectionRule writes the named columns of r (updated_at always). Writing any column makes a
// stub rule a real one. A source reference held by another rule yields a *DuplicateRuleError.
func (s *Store) UpdateDetectionRule(ctx context.Context, r *DetectionRule, columns ...string) error {
	r.fillLists()
	r.UpdatedAt = s.Now()
	r.IsStub = false
	res, err := s.db.NewUpdate().Model(r).Column(append(columns, "updated_at", "is_stub")...).WherePK().Returning("*").Exec(ctx)
	if err != nil {
		return fmt.Errorf("update detection rule %s: %w", r.UUID, s.ruleWriteErr(ctx, r, err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update detection rule %s: %w", r.UUID, ErrNotFound)
	}
	r.fillLists()
	return nil
}

// DeleteDetectionRule deletes the rule; its alerts keep existing with no rule (ON DELETE SET NULL).
func (s *Store) DeleteDetectionRule(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*DetectionRule)(nil)).Where("uuid = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete detection rule %s: %w", id, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete detection rule %s: %w", id, ErrNotFound)
	}
	return nil
}

// likeContains builds an ILIKE pattern matching s anywhere, with LIKE's wildcards in s escaped.
func likeContains(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}
