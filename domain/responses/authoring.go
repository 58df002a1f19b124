package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// Definition is what the rules of saving a workflow read of its definition.
type Definition struct {
	Steps             json.RawMessage
	ApprovalMode      string
	RequiredApprovals int
}

// DefinitionOf is the part of a stored definition the saving rules read.
func DefinitionOf(d store.WorkflowDefinition) Definition {
	return Definition{Steps: d.Steps, ApprovalMode: d.ApprovalMode, RequiredApprovals: d.RequiredApprovals}
}

// approvalRank orders approval modes from the least to the most gated.
func approvalRank(mode string) int {
	switch mode {
	case store.ApprovalModeNever:
		return 0
	case store.ApprovalModeAgentOnly:
		return 1
	}
	return 2 // always, and anything unknown: the strictest
}

// CheckSave applies the rules of saving a workflow definition (create: before is nil; update: before
// is the stored definition, called only when the definition changes), whatever the front door:
//   - a step may not send a secret, or what a step received in exchange for one, to a written-out
//     host outside the secret's allowed_hosts (SecretHostError, 422);
//   - only an admin may save a workflow that sends what a step received in exchange for a secret
//     (a value read from {{steps.<name>...}} of a step carrying a secret, or from a code step or a
//     for_each item after one), or that names a secret with an approval_mode other than always
//     (never, and agent_only, which does not gate a human key), or lower a workflow's approval_mode or
//     required_approvals (ForbiddenError, 403). The rule holds on create and on every change of the
//     definition, so a PATCH adding a secret to an agent_only workflow is refused like a create.
func CheckSave(ctx context.Context, src SecretSource, actor Actor, before *Definition, after Definition) error {
	cfg, err := ParseSteps(after.Steps)
	if err != nil {
		return err
	}
	if err := CheckSecretHosts(ctx, src, cfg); err != nil {
		return err
	}
	if actor.isAdmin() {
		return nil
	}
	forbid := func(reason string) error {
		return &ForbiddenError{Scopes: []string{auth.ScopeAdmin}, Reason: reason}
	}
	if before != nil {
		if approvalRank(after.ApprovalMode) < approvalRank(before.ApprovalMode) {
			return forbid(fmt.Sprintf("Lowering approval_mode from %s to %s needs the admin scope.", before.ApprovalMode, after.ApprovalMode))
		}
		if after.RequiredApprovals < before.RequiredApprovals {
			return forbid(fmt.Sprintf("Lowering required_approvals from %d to %d needs the admin scope.", before.RequiredApprovals, after.RequiredApprovals))
		}
	}
	for i, st := range cfg.Steps {
		if st.IsCode() {
			continue // a code step sends nothing; a step sending its result is checked below
		}
		refs, via := cfg.StepTaint(i)
		for _, ref := range refs {
			from, derived := via[ref]
			if name, isSecret := strings.CutPrefix(ref, "secrets."); isSecret && derived {
				return forbid(fmt.Sprintf("Step %d (%s) sends what step %s received in exchange for secret %s: saving such a workflow needs the admin scope.",
					i, st.Name, from, name))
			}
		}
	}
	// agent_only gates agents only: run with a human key it is never (R4-7), so anything but always lets
	// a non-admin's secret-naming workflow run without a person's approval.
	if names := SecretNames(cfg); len(names) > 0 && after.ApprovalMode != store.ApprovalModeAlways {
		return forbid("A workflow that names a secret (" + strings.Join(names, ", ") + ") with approval_mode " + after.ApprovalMode +
			" runs without a person's approval when a human key executes it: without the admin scope it must be saved with approval_mode always.")
	}
	return nil
}
