package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

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
	if err := s.deps.Store.CreateWorkflow(ctx, w); err != nil {
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
	prev := DefinitionOf(w.Definition())
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
		return s.switchSystemWorkflow(ctx, w, *state == store.WorkflowStateActive)
	}
	if state != nil && *state != w.State {
		w.State, cols = *state, append(cols, "state")
	}
	if len(cols) > 0 {
		if err := s.deps.Store.UpdateWorkflow(ctx, &w, changed, cols...); err != nil {
			return store.Workflow{}, notFoundAs(err, "Workflow")
		}
	}
	return w, nil
}

// switchSystemWorkflow turns a system workflow off or on; on needs every secret it names.
func (s *Service) switchSystemWorkflow(ctx context.Context, w store.Workflow, enable bool) (store.Workflow, error) {
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
	updated, err := s.deps.Store.SetSystemWorkflowEnabled(ctx, w.UUID, enable)
	if err != nil {
		return store.Workflow{}, notFoundAs(err, "Workflow")
	}
	return updated, nil
}

// DeleteWorkflow deletes workflow id (its runs and versions stay); a system workflow cannot be
// deleted (ErrSystemNotDeletable).
func (s *Service) DeleteWorkflow(ctx context.Context, id uuid.UUID) error {
	w, err := s.deps.Store.GetWorkflow(ctx, id)
	if err != nil {
		return notFoundAs(err, "Workflow")
	}
	if w.IsSystem {
		return ErrSystemNotDeletable
	}
	if err := s.deps.Store.DeleteWorkflow(ctx, id); err != nil {
		return notFoundAs(err, "Workflow")
	}
	return nil
}
