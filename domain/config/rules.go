package config

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/kit/optional"
	"github.com/vigil-soc/vigil/store"
)

// RuleReader reads one detection rule (store.Store.GetDetectionRule).
type RuleReader interface {
	GetDetectionRule(ctx context.Context, id uuid.UUID) (store.DetectionRule, error)
}

// Rules applies the rules of detection rules (API.md §4).
type Rules struct {
	rules   RuleReader
	changes audit.Store
}

// NewRules is the detection-rule service over rules (reads) and changes (writes with their audit
// events).
func NewRules(rules RuleReader, changes audit.Store) *Rules {
	return &Rules{rules: rules, changes: changes}
}

// RuleFields are a new detection rule. IsActive nil is true; CreatedBy nil is the actor's key
// prefix; the lists lose their repeated elements.
type RuleFields struct {
	Name                                                           string
	SourceRuleID, SourceName, Severity                             *string
	IsActive                                                       *bool
	MitreTactics, MitreTechniques, MitreSubtechniques, DataSources []string
	RunFrequency, CreatedBy, Documentation                         *string
}

// Create stores a new rule with its audit event by actor. A (source_name, source_rule_id) pair held
// by a rule is a *store.DuplicateRuleError, unless the holder is a stub the pipeline created: the
// stub is completed with f (store.Store.CreateDetectionRule).
func (s *Rules) Create(ctx context.Context, actor store.Actor, f RuleFields) (store.DetectionRule, error) {
	if errs := CheckRule(f); len(errs) > 0 {
		return store.DetectionRule{}, errs
	}
	r := store.DetectionRule{Name: f.Name, SourceRuleID: f.SourceRuleID, SourceName: f.SourceName, Severity: f.Severity,
		IsActive: f.IsActive == nil || *f.IsActive, MitreTactics: Unique(f.MitreTactics),
		MitreTechniques: Unique(f.MitreTechniques), MitreSubtechniques: Unique(f.MitreSubtechniques),
		DataSources: Unique(f.DataSources), RunFrequency: f.RunFrequency, CreatedBy: f.CreatedBy, Documentation: f.Documentation}
	if r.CreatedBy == nil && actor.KeyPrefix != "" {
		p := actor.KeyPrefix
		r.CreatedBy = &p
	}
	err := audit.Record(ctx, s.changes, actor, store.AuditCreated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		_, err := tx.CreateDetectionRule(ctx, &r)
		return audit.Subject{Type: audit.DetectionRule, UUID: r.UUID, Name: r.Name, After: r}, err
	})
	if err != nil {
		return store.DetectionRule{}, fmt.Errorf("create detection rule: %w", err)
	}
	return r, nil
}

// RulePatch is a rule update: nil and unset fields are unchanged, a null clears, lists are replaced
// (without their repeated elements).
type RulePatch struct {
	Name                                                            *string
	SourceRuleID, SourceName, Severity, RunFrequency, Documentation optional.Value[string]
	IsActive                                                        *bool
	MitreTactics, MitreTechniques, MitreSubtechniques, DataSources  *[]string
}

// Update applies p to rule id with its audit event by actor (none when nothing changed). A missing
// rule is store.ErrNotFound; a taken source reference a *store.DuplicateRuleError.
func (s *Rules) Update(ctx context.Context, actor store.Actor, id uuid.UUID, p RulePatch) (store.DetectionRule, error) {
	if errs := CheckRulePatch(p); len(errs) > 0 {
		return store.DetectionRule{}, errs
	}
	r, err := s.rules.GetDetectionRule(ctx, id)
	if err != nil {
		return store.DetectionRule{}, fmt.Errorf("get detection rule %s: %w", id, err)
	}
	before := r
	var cols []string
	cols = setValue(p.Name, &r.Name, "name", cols)
	cols = setNullable(p.SourceRuleID, &r.SourceRuleID, "source_rule_id", cols)
	cols = setNullable(p.SourceName, &r.SourceName, "source_name", cols)
	cols = setNullable(p.Severity, &r.Severity, "severity", cols)
	cols = setNullable(p.RunFrequency, &r.RunFrequency, "run_frequency", cols)
	cols = setNullable(p.Documentation, &r.Documentation, "documentation", cols)
	cols = setValue(p.IsActive, &r.IsActive, "is_active", cols)
	lists := []struct {
		in     *[]string
		dst    *[]string
		column string
	}{
		{p.MitreTactics, &r.MitreTactics, "mitre_tactics"},
		{p.MitreTechniques, &r.MitreTechniques, "mitre_techniques"},
		{p.MitreSubtechniques, &r.MitreSubtechniques, "mitre_subtechniques"},
		{p.DataSources, &r.DataSources, "data_sources"},
	}
	for _, l := range lists {
		if l.in != nil {
			*l.dst, cols = Unique(*l.in), append(cols, l.column)
		}
	}
	if len(cols) == 0 {
		return r, nil
	}
	err = audit.Record(ctx, s.changes, actor, store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		err := tx.UpdateDetectionRule(ctx, &r, cols...)
		return audit.Subject{Type: audit.DetectionRule, UUID: r.UUID, Name: r.Name, Before: before, After: r}, err
	})
	if err != nil {
		return store.DetectionRule{}, fmt.Errorf("update detection rule %s: %w", id, err)
	}
	return r, nil
}

// Delete removes rule id with its audit event by actor (its alerts stay, with no rule). A missing
// rule is store.ErrNotFound.
func (s *Rules) Delete(ctx context.Context, actor store.Actor, id uuid.UUID) error {
	return deleteAudited(ctx, s.changes, actor, "detection rule", id, (*store.Store).GetDetectionRule, (*store.Store).DeleteDetectionRule,
		func(old store.DetectionRule) audit.Subject {
			return audit.Subject{Type: audit.DetectionRule, UUID: id, Name: old.Name, Before: old}
		})
}
