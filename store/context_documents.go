package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/vigil-soc/vigil/kit/targeting"
)

// ContextDocument is a runbook, IR plan, SOP, playbook, detection guide or other document shown with
// alerts (SEED-SPEC §2.4, API.md §6): to every alert when IsGlobal, else to the alerts its
// TargetingRules match (none when it has no rules).
type ContextDocument struct {
	bun.BaseModel `bun:"table:context_documents"`

	UUID           uuid.UUID        `bun:"uuid,pk,type:uuid"`
	Title          string           `bun:"title"`
	DocumentType   string           `bun:"document_type"`
	IsGlobal       bool             `bun:"is_global"`
	Description    *string          `bun:"description"`
	Tags           []string         `bun:"tags,array"`
	Version        int              `bun:"version"`
	Content        string           `bun:"content"`                    // "" in list summaries
	TargetingRules *targeting.Rules `bun:"targeting_rules,type:jsonb"` // nil: no rules
	CreatedBy      *string          `bun:"created_by"`
	CreatedAt      time.Time        `bun:"created_at"`
	UpdatedAt      time.Time        `bun:"updated_at"`
}

// DocumentTypes returns the allowed document_type values.
func DocumentTypes() []string {
	return []string{"runbook", "ir_plan", "sop", "playbook", "detection_guide", "other"}
}

func (d *ContextDocument) normalize() {
	if d.Tags == nil {
		d.Tags = []string{}
	}
	if d.TargetingRules != nil {
		if d.TargetingRules.Empty() {
			d.TargetingRules = nil
			return
		}
		if d.TargetingRules.MatchAny == nil {
			d.TargetingRules.MatchAny = []targeting.Rule{}
		}
		if d.TargetingRules.MatchAll == nil {
			d.TargetingRules.MatchAll = []targeting.Rule{}
		}
	}
}

// CreateContextDocument inserts d at version 1, filling UUID and timestamps. Empty targeting rules
// are stored as none.
func (s *Store) CreateContextDocument(ctx context.Context, d *ContextDocument) error {
	d.normalize()
	now := s.Now()
	if d.UUID == uuid.Nil {
		d.UUID = uuid.New()
	}
	d.Version, d.CreatedAt, d.UpdatedAt = 1, now, now
	if _, err := s.db.NewInsert().Model(d).Exec(ctx); err != nil {
		return fmt.Errorf("insert context document: %w", mapErr(err))
	}
	return nil
}

// GetContextDocument loads one document (with content) by uuid.
func (s *Store) GetContextDocument(ctx context.Context, id uuid.UUID) (ContextDocument, error) {
	var d ContextDocument
	if err := s.db.NewSelect().Model(&d).Where("uuid = ?", id).Scan(ctx); err != nil {
		return ContextDocument{}, fmt.Errorf("get context document %s: %w", id, mapErr(err))
	}
	d.normalize()
	return d, nil
}

// Sort columns of ListContextDocuments.
const (
	DocSortTitle        = "title"
	DocSortDocumentType = "document_type"
	DocSortUpdatedAt    = "updated_at"
	DocSortCreatedAt    = "created_at"
)

// ContextDocumentFilter narrows ListContextDocuments. Empty fields do not filter.
type ContextDocumentFilter struct {
	DocumentTypes []string // any of
	IsGlobal      *bool
	Q             string // case-insensitive substring of title or description
	SortBy        string // DocSort*; default updated_at
	Desc          bool
	Page          Page
}

// ListContextDocuments returns one page of document summaries (Content left empty) and the total.
func (s *Store) ListContextDocuments(ctx context.Context, f ContextDocumentFilter) ([]ContextDocument, int, error) {
	var docs []ContextDocument
	q := s.db.NewSelect().Model(&docs).ExcludeColumn("content")
	if len(f.DocumentTypes) > 0 {
		q = q.Where("document_type IN (?)", bun.List(f.DocumentTypes))
	}
	if f.IsGlobal != nil {
		q = q.Where("is_global = ?", *f.IsGlobal)
	}
	if f.Q != "" {
		pattern := likeContains(f.Q)
		q = q.Where("(title ILIKE ? OR description ILIKE ?)", pattern, pattern)
	}
	dir := "ASC"
	if f.Desc {
		dir = "DESC"
	}
	switch f.SortBy {
	case DocSortTitle:
		q = q.OrderExpr("lower(title) " + dir + ", uuid " + dir)
	case DocSortDocumentType:
		q = q.OrderExpr("document_type " + dir + ", lower(title), uuid")
	case DocSortCreatedAt:
		q = q.OrderExpr("created_at " + dir + ", uuid " + dir)
	default:
		q = q.OrderExpr("updated_at " + dir + ", uuid " + dir)
	}
	total, err := q.Limit(f.Page.Limit()).Offset(f.Page.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list context documents: %w", mapErr(err))
	}
	for i := range docs {
		docs[i].normalize()
	}
	return docs, int(total), nil
}

// UpdateContextDocument writes the named columns of d (updated_at always) and reloads d. When
// "content" is among them and differs from the stored content, version goes up by one, atomically.
func (s *Store) UpdateContextDocument(ctx context.Context, d *ContextDocument, columns ...string) error {
	d.normalize()
	d.UpdatedAt = s.Now()
	q := s.db.NewUpdate().Model(d).Column(append(columns, "updated_at")...).WherePK()
	if slices.Contains(columns, "content") {
		// SET expressions see the old row, so this compares with the stored content.
		q = q.Set("version = CASE WHEN content IS DISTINCT FROM ? THEN version + 1 ELSE version END", d.Content)
	}
	res, err := q.Returning("*").Exec(ctx)
	if err != nil {
		return fmt.Errorf("update context document %s: %w", d.UUID, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update context document %s: %w", d.UUID, ErrNotFound)
	}
	d.normalize()
	return nil
}

// DeleteContextDocument deletes one document.
func (s *Store) DeleteContextDocument(ctx context.Context, id uuid.UUID) error {
	res, err := s.db.NewDelete().Model((*ContextDocument)(nil)).Where("uuid = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete context document %s: %w", id, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete context document %s: %w", id, ErrNotFound)
	}
	return nil
}

// ApplicableContextDocuments returns the full documents that apply to an alert described by subj:
// every global document, then every non-global one whose targeting rules match (a non-global
// document without rules applies to none). Each group is ordered by title, then uuid. Rules are
// evaluated on a narrow read (uuid, is_global, rules); the documents that apply are loaded whole.
func (s *Store) ApplicableContextDocuments(ctx context.Context, subj targeting.Subject) ([]ContextDocument, error) {
	docs, err := s.applicableContextDocuments(ctx, []targeting.Subject{subj})
	if err != nil {
		return nil, err
	}
	return docs[0], nil
}

// applicableContextDocuments returns the documents that apply to each of subjs
// (ApplicableContextDocuments), in two statements whatever their number.
func (s *Store) applicableContextDocuments(ctx context.Context, subjs []targeting.Subject) ([][]ContextDocument, error) {
	var candidates []struct {
		UUID           uuid.UUID        `bun:"uuid"`
		IsGlobal       bool             `bun:"is_global"`
		TargetingRules *targeting.Rules `bun:"targeting_rules,type:jsonb"`
	}
	err := s.db.NewSelect().Model((*ContextDocument)(nil)).Column("uuid", "is_global").
		ColumnExpr("CASE WHEN is_global THEN NULL ELSE targeting_rules END AS targeting_rules").
		Where("is_global OR targeting_rules IS NOT NULL").
		OrderExpr("is_global DESC, lower(title), uuid").Scan(ctx, &candidates)
	if err != nil {
		return nil, fmt.Errorf("load context document candidates: %w", mapErr(err))
	}
	applying := make([][]uuid.UUID, len(subjs)) // each subject's documents, in the candidates' order
	wanted := map[uuid.UUID]bool{}
	for i, subj := range subjs {
		for _, c := range candidates {
			if targeting.Applies(c.IsGlobal, c.TargetingRules, subj) {
				applying[i] = append(applying[i], c.UUID)
				wanted[c.UUID] = true
			}
		}
	}
	var loaded []ContextDocument
	if len(wanted) > 0 {
		if err := s.db.NewSelect().Model(&loaded).Where("uuid IN (?)", bun.List(slices.Collect(maps.Keys(wanted)))).Scan(ctx); err != nil {
			return nil, fmt.Errorf("load applicable context documents: %w", mapErr(err))
		}
	}
	byUUID := make(map[uuid.UUID]ContextDocument, len(loaded))
	for _, d := range loaded {
		d.normalize()
		byUUID[d.UUID] = d
	}
	out := make([][]ContextDocument, len(subjs))
	for i, ids := range applying {
		out[i] = []ContextDocument{}
		for _, id := range ids {
			if d, ok := byUUID[id]; ok { // a document changed between the two reads keeps the order of the first; one deleted is dropped
				out[i] = append(out[i], d)
			}
		}
	}
	return out, nil
}

// AlertSubject builds the targeting subject of an alert from its row and its detection rule, for
// callers that do not hold the alert already. An unknown alert yields ErrNotFound.
func (s *Store) AlertSubject(ctx context.Context, alertUUID uuid.UUID) (targeting.Subject, error) {
	var row struct {
		SourceName  string   `bun:"source_name"`
		Severity    string   `bun:"severity"`
		Title       string   `bun:"title"`
		Tags        []string `bun:"tags,array"`
		RuleName    *string  `bun:"rule_name"`
		RuleTactics []string `bun:"rule_tactics,array"`
	}
	err := s.db.NewRaw(`
		SELECT a.source_name, a.severity, a.title, a.tags, r.name AS rule_name, r.mitre_tactics AS rule_tactics
		FROM alerts a LEFT JOIN detection_rules r ON r.id = a.detection_rule_id
		WHERE a.uuid = ?`, alertUUID).Scan(ctx, &row)
	if err != nil {
		return targeting.Subject{}, fmt.Errorf("alert %s targeting subject: %w", alertUUID, mapErr(err))
	}
	var rule *DetectionRule
	if row.RuleName != nil {
		rule = &DetectionRule{Name: *row.RuleName, MitreTactics: row.RuleTactics}
	}
	return SubjectFor(row.SourceName, row.Severity, row.Title, row.Tags, rule), nil
}

// SubjectFor builds the targeting subject of an alert from its fields and its detection rule (nil
// when it has none), for callers that hold the alert already.
func SubjectFor(sourceName, severity, title string, tags []string, rule *DetectionRule) targeting.Subject {
	subj := targeting.Subject{SourceName: sourceName, Severity: severity, Title: title, Tags: tags}
	if rule != nil {
		subj.RuleName, subj.RuleTactics = rule.Name, rule.MitreTactics
	}
	return subj
}
