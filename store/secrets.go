package store

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// WorkflowSecret is a named secret workflows reference as {{secrets.NAME}}. The value is sealed by the
// caller (secretbox) before it reaches the store and is never returned by the API.
type WorkflowSecret struct {
	bun.BaseModel `bun:"table:workflow_secrets"`

	Name        string  `bun:"name,pk"`
	ValueSealed []byte  `bun:"value_sealed"`
	Description *string `bun:"description"`
	// AllowedHosts: the hosts (netguard.HostList patterns) a request carrying the secret may go to.
	AllowedHosts []string  `bun:"allowed_hosts,array"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`
}

// PutWorkflowSecret creates or replaces a secret and re-derives the state of system workflows.
// created reports whether the name was new.
func (s *Store) PutWorkflowSecret(ctx context.Context, sec *WorkflowSecret) (created bool, err error) {
	now := s.Now()
	sec.CreatedAt, sec.UpdatedAt = now, now
	if sec.AllowedHosts == nil {
		sec.AllowedHosts = []string{}
	}
	var inserted bool
	err = s.db.NewInsert().Model(sec).
		On("CONFLICT (name) DO UPDATE").
		Set("value_sealed = EXCLUDED.value_sealed, description = EXCLUDED.description, allowed_hosts = EXCLUDED.allowed_hosts, updated_at = EXCLUDED.updated_at").
		Returning("created_at, (xmax = 0) AS inserted").Scan(ctx, &sec.CreatedAt, &inserted)
	if err != nil {
		return false, fmt.Errorf("put workflow secret %s: %w", sec.Name, mapErr(err))
	}
	return inserted, s.SyncSystemWorkflowStates(ctx)
}

// ListWorkflowSecrets returns secrets by name (sealed values included; callers must not expose them).
func (s *Store) ListWorkflowSecrets(ctx context.Context, p Page) ([]WorkflowSecret, int, error) {
	var out []WorkflowSecret
	total, err := s.db.NewSelect().Model(&out).OrderExpr("name ASC").Limit(p.Limit()).Offset(p.Offset()).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list workflow secrets: %w", mapErr(err))
	}
	return out, int(total), nil
}

// GetWorkflowSecret loads one secret by name.
func (s *Store) GetWorkflowSecret(ctx context.Context, name string) (WorkflowSecret, error) {
	var sec WorkflowSecret
	if err := s.db.NewSelect().Model(&sec).Where("name = ?", name).Scan(ctx); err != nil {
		return WorkflowSecret{}, fmt.Errorf("get workflow secret %s: %w", name, mapErr(err))
	}
	return sec, nil
}

// DeleteWorkflowSecret removes a secret; system workflows needing it become inactive.
func (s *Store) DeleteWorkflowSecret(ctx context.Context, name string) error {
	res, err := s.db.NewDelete().Model((*WorkflowSecret)(nil)).Where("name = ?", name).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete workflow secret %s: %w", name, mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete workflow secret %s: %w", name, ErrNotFound)
	}
	return s.SyncSystemWorkflowStates(ctx)
}

// SealedWorkflowSecrets returns the sealed values of the named secrets that exist.
func (s *Store) SealedWorkflowSecrets(ctx context.Context, names []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(names) == 0 {
		return out, nil
	}
	var rows []WorkflowSecret
	if err := s.db.NewSelect().Model(&rows).Where("name IN (?)", bun.List(names)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("load workflow secrets: %w", mapErr(err))
	}
	for _, r := range rows {
		out[r.Name] = r.ValueSealed
	}
	return out, nil
}

// WorkflowSecretHosts returns the allowed hosts of the named secrets that exist.
func (s *Store) WorkflowSecretHosts(ctx context.Context, names []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(names) == 0 {
		return out, nil
	}
	var rows []WorkflowSecret
	if err := s.db.NewSelect().Model(&rows).Column("name", "allowed_hosts").Where("name IN (?)", bun.List(names)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("allowed hosts of workflow secrets: %w", mapErr(err))
	}
	for _, r := range rows {
		out[r.Name] = r.AllowedHosts
	}
	return out, nil
}

// BindUnboundSecrets sets hosts as the allowed hosts of those named secrets that have none (no admin
// set them: a PUT needs at least one) and returns how many it changed.
func (s *Store) BindUnboundSecrets(ctx context.Context, names, hosts []string) (int, error) {
	if len(names) == 0 || len(hosts) == 0 {
		return 0, nil
	}
	res, err := s.db.NewUpdate().Model((*WorkflowSecret)(nil)).Set("allowed_hosts = ?", pgdialectArray(hosts)).
		Where("name IN (?)", bun.List(names)).Where("allowed_hosts = '{}'").Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("bind workflow secrets to hosts: %w", mapErr(err))
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
