package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Errors of the workflow definition rules; front doors map them to their codes (API.md §8).
var (
	// ErrSystemReadOnly: a system workflow's definition cannot change, only its state (403
	// SYSTEM_WORKFLOW_READ_ONLY).
	ErrSystemReadOnly = errors.New("system workflows accept only state changes")
	// ErrSystemNotDeletable: a system workflow cannot be deleted, only made inactive (403
	// SYSTEM_WORKFLOW).
	ErrSystemNotDeletable = errors.New("system workflows cannot be deleted")
)

// NotConfiguredError: a system workflow cannot be activated before the secrets it names are stored
// (409 WORKFLOW_NOT_CONFIGURED); Missing lists them.
type NotConfiguredError struct{ Missing []string }

func (e *NotConfiguredError) Error() string {
	return "workflow secrets not stored: " + strings.Join(e.Missing, ", ")
}

// ValidateSteps checks a workflow's steps as the engine parses them (httpsteps.ParseWorkflowConfig: kind,
// when, for_each and code compiled, a problem reported with the step and its line and column), with
// locations relative to the definition (["steps", 1, "url"]). Workflows have no auth namespace
// (credentials are named secrets), and secret names match ^[A-Z][A-Z0-9_]{0,63}$.
func ValidateSteps(steps json.RawMessage) validate.Errors {
	var errs validate.Errors
	var list []json.RawMessage
	if err := json.Unmarshal(steps, &list); err != nil {
		errs.Add([]any{"steps"}, validate.TypeList, "steps must be a list of step objects.", nil)
		return errs
	}
	raw, _ := json.Marshal(map[string]json.RawMessage{"steps": steps})
	cfg, verrs := httpsteps.ParseWorkflowConfig(raw)
	if len(verrs) > 0 {
		return verrs
	}
	for i, st := range cfg.Steps {
		one := httpsteps.Config{Steps: []httpsteps.Step{st}}
		for _, v := range one.Variables() {
			ns, rest, _ := strings.Cut(v, ".")
			switch ns {
			case "auth":
				errs.Add([]any{"steps", i}, validate.TypeValue, "{{"+v+"}}: workflows have no auth namespace; store credentials as named secrets and use {{secrets.NAME}}.", v)
			case "secrets":
				name, _, _ := strings.Cut(rest, ".")
				if !ValidSecretName(name) {
					errs.Add([]any{"steps", i}, validate.TypeValue, "{{"+v+"}}: secret names match ^[A-Z][A-Z0-9_]{0,63}$.", v)
				}
			}
		}
	}
	return errs
}

// prepareSteps applies the rules of saving steps to w: they must validate (validate.Errors), the
// secrets they name become w.RequiredSecrets, and the definition must pass CheckSave for actor
// (secret hosts, what needs admin); before is the stored definition on update, nil on create.
func (s *Service) prepareSteps(ctx context.Context, actor Actor, before *Definition, w *store.Workflow) error {
	if errs := ValidateSteps(w.Steps); len(errs) > 0 {
		return errs
	}
	cfg, err := ParseSteps(w.Steps)
	if err != nil {
		return err
	}
	w.RequiredSecrets = SecretNames(cfg)
	return CheckSave(ctx, s.deps.Store, actor, before, DefinitionOf(w.Definition()))
}

// CreateWorkflow saves a new workflow definition (version 1) after the rules of its steps
// (ValidateSteps, required secrets, CheckSave for actor).
func (s *Service) CreateWorkflow(ctx context.Context, actor Actor, w *store.Workflow) error {
	if err := s.prepareSteps(ctx, actor, nil, w); err != nil {
		return err
	}
	err := audit.Record(ctx, s.deps.Store, actor.auditor(), store.AuditCreated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		if err := tx.CreateWorkflow(ctx, w); err != nil {
			return audit.Subject{}, err
		}
		return audit.Subject{Type: audit.Workflow, UUID: w.UUID, Name: w.Name, After: w}, nil
	})
	if err != nil {
		return fmt.Errorf("create workflow: %w", err)
	}
	return nil
}

// UpdateWorkflow changes workflow id: edit changes its definition, state (when not nil) its state.
// A changed definition is a new version (kept in the workflow's versions) and passes the rules of
// its steps (CheckSave with the stored definition as before); a system workflow's definition cannot change (ErrSystemReadOnly) and its state is a
// switch: active needs every secret it names stored (*NotConfiguredError), anything else turns it
// off. Nothing changed writes nothing. It returns the workflow as saved.
func (s *Service) UpdateWorkflow(ctx context.Context, actor Actor, id uuid.UUID, edit func(*store.WorkflowDefinition), state *string) (store.Workflow, error) {
	w, err := s.deps.Store.GetWorkflow(ctx, id)
	if err != nil {
		return store.Workflow{}, notFoundAs(err, "Workflow")
	}
	prev, stored := DefinitionOf(w.Definition()), w
	before, _ := json.Marshal(w.Definition())
	d := w.Definition()
	edit(&d)
	after, _ := json.Marshal(d)
	changed := string(before) != string(after)
	if changed && w.IsSystem {
		return store.Workflow{}, ErrSystemReadOnly
	}
	cols := []string{}
	if changed {
		w.ApplyDefinition(d)
		if err := s.prepareSteps(ctx, actor, &prev, &w); err != nil {
			return store.Workflow{}, err
		}
		cols = append(cols, "name", "description", "documentation", "workflow_type", "indicator_types", "steps", "timeout_seconds",
			"retry_max_attempts", "retry_initial_interval_seconds", "approval_mode", "approval_timeout_seconds", "approval_channel",
			"required_approvals", "risk_level", "tags", "time_saved_minutes", "required_secrets")
	}
	if w.IsSystem && state != nil {
		return s.switchSystemWorkflow(ctx, actor, w, *state == store.WorkflowStateActive)
	}
	if state != nil && *state != w.State {
		w.State, cols = *state, append(cols, "state")
	}
	if len(cols) > 0 {
		err := audit.Record(ctx, s.deps.Store, actor.auditor(), store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
			if err := tx.UpdateWorkflow(ctx, &w, changed, cols...); err != nil {
				return audit.Subject{}, err
			}
			return audit.Subject{Type: audit.Workflow, UUID: w.UUID, Name: w.Name, Before: stored, After: w}, nil
		})
		if err != nil {
			return store.Workflow{}, notFoundAs(err, "Workflow")
		}
	}
	return w, nil
}

// switchSystemWorkflow turns a system workflow off or on; on needs every secret it names.
func (s *Service) switchSystemWorkflow(ctx context.Context, actor Actor, w store.Workflow, enable bool) (store.Workflow, error) {
	if enable {
		have, err := s.deps.Store.SealedWorkflowSecrets(ctx, w.RequiredSecrets)
		if err != nil {
			return store.Workflow{}, fmt.Errorf("secrets of workflow %s: %w", w.UUID, err)
		}
		missing := []string{}
		for _, name := range w.RequiredSecrets {
			if _, ok := have[name]; !ok {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return store.Workflow{}, &NotConfiguredError{Missing: missing}
		}
	}
	var updated store.Workflow
	err := audit.Record(ctx, s.deps.Store, actor.auditor(), store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		var err error
		if updated, err = tx.SetSystemWorkflowEnabled(ctx, w.UUID, enable); err != nil {
			return audit.Subject{}, err
		}
		return audit.Subject{Type: audit.Workflow, UUID: w.UUID, Name: w.Name, Before: w, After: updated}, nil
	})
	if err != nil {
		return store.Workflow{}, notFoundAs(err, "Workflow")
	}
	return updated, nil
}

// DeleteWorkflow deletes workflow id (its runs and versions stay); a system workflow cannot be
// deleted (ErrSystemNotDeletable).
func (s *Service) DeleteWorkflow(ctx context.Context, actor Actor, id uuid.UUID) error {
	w, err := s.deps.Store.GetWorkflow(ctx, id)
	if err != nil {
		return notFoundAs(err, "Workflow")
	}
	if w.IsSystem {
		return ErrSystemNotDeletable
	}
	err = audit.Record(ctx, s.deps.Store, actor.auditor(), store.AuditDeleted, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		if err := tx.DeleteWorkflow(ctx, id); err != nil {
			return audit.Subject{}, err
		}
		return audit.Subject{Type: audit.Workflow, UUID: w.UUID, Name: w.Name, Before: w}, nil
	})
	if err != nil {
		return notFoundAs(err, "Workflow")
	}
	return nil
}

// PutSecret stores a workflow secret (created, or replaced when one of its name exists) and reports
// whether it was created. Its audit event names the secret and its hosts; the value shows only as
// "[redacted]", and the description not at all (it is free text beside a secret).
func (s *Service) PutSecret(ctx context.Context, actor Actor, sec *store.WorkflowSecret) (bool, error) {
	var created bool
	err := audit.Record(ctx, s.deps.Store, actor.auditor(), store.AuditUpdated, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		subj := audit.Subject{Type: audit.WorkflowSecret, Name: sec.Name, After: sec, Only: secretAuditColumns}
		if old, err := tx.GetWorkflowSecret(ctx, sec.Name); err == nil {
			subj.Before = old
		} else if !errors.Is(err, store.ErrNotFound) {
			return subj, err
		}
		var err error
		if created, err = tx.PutWorkflowSecret(ctx, sec); created {
			subj.Action = store.AuditCreated
		}
		return subj, err
	})
	if err != nil {
		return false, fmt.Errorf("put workflow secret: %w", err)
	}
	return created, nil
}

// DeleteSecret deletes the workflow secret name.
func (s *Service) DeleteSecret(ctx context.Context, actor Actor, name string) error {
	err := audit.Record(ctx, s.deps.Store, actor.auditor(), store.AuditDeleted, func(ctx context.Context, tx *store.Store) (audit.Subject, error) {
		old, err := tx.GetWorkflowSecret(ctx, name)
		if err != nil {
			return audit.Subject{}, err
		}
		if err := tx.DeleteWorkflowSecret(ctx, name); err != nil {
			return audit.Subject{}, err
		}
		return audit.Subject{Type: audit.WorkflowSecret, Name: name, Before: old, Only: secretAuditColumns}, nil
	})
	if err != nil {
		return notFoundAs(err, "Secret")
	}
	return nil
}

// secretAuditColumns: what the audit trail keeps of a workflow secret (names and hosts only; the
// value as "[redacted]").
var secretAuditColumns = []string{"name", "allowed_hosts", "value_sealed"}
