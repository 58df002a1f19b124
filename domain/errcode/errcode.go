// Package errcode is the one table from a rule owner's or the store's error to the contract's answer
// (API.md §0): its HTTP status, its error code, message and details. REST answers it as the error
// body, MCP as a tool error (or a JSON-RPC error for a resource read), the console as a page; none
// of them maps an error on its own.
package errcode

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/cases"
	"github.com/vigil-soc/vigil/domain/comments"
	"github.com/vigil-soc/vigil/domain/config"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/domain/ingest"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// Fault is an error in the contract's terms.
type Fault struct {
	Status  int
	Code    string
	Message string
	Details map[string]any  // nil when there are none
	Fields  validate.Errors // VALIDATION_ERROR's field list (the body's "detail")
	Subject string          // NOT_FOUND: what was not found ("Workflow"), when the rule named it
}

// Of answers err in the contract's terms; ok is false for an error no rule names (an internal
// error: the door logs it and answers 500 without its text).
func Of(err error) (f Fault, ok bool) {
	var (
		verrs validate.Errors
		nf    *responses.NotFoundError
		na    *responses.NotActiveError
		fb    *responses.ForbiddenError
		un    *responses.UnavailableError
		oc    *cases.AlertInOtherCaseError
		sn    *store.SourceNotAllowedError
		dr    *store.DuplicateRuleError
		sm    *ingest.SystemMappingError
		br    *enrichment.BuiltinRestrictedError
		nc    *responses.NotConfiguredError
		ex    *config.ExistsError
	)
	switch {
	case err == nil:
		return Fault{}, false
	case errors.As(err, &verrs):
		return Fault{Status: http.StatusUnprocessableEntity, Code: "VALIDATION_ERROR", Message: "Request validation failed.", Fields: verrs}, true
	case errors.As(err, &nf):
		return Fault{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: nf.What + " not found.", Subject: nf.What}, true
	case errors.As(err, &na):
		return Fault{Status: http.StatusConflict, Code: "WORKFLOW_NOT_ACTIVE", Message: "Workflow is " + na.State + ", not active.",
			Details: map[string]any{"state": na.State}}, true
	case errors.As(err, &fb):
		return Fault{Status: http.StatusForbidden, Code: "FORBIDDEN", Message: fb.Reason,
			Details: map[string]any{"required_scopes": fb.Scopes, "missing_scopes": fb.Scopes}}, true
	case errors.As(err, &un):
		return unavailable(un.Message), true
	case errors.As(err, &sn):
		details := map[string]any{"source_name": sn.Source}
		if sn.AlertUUID != uuid.Nil {
			details["alert_uuid"] = sn.AlertUUID.String()
		}
		return Fault{Status: http.StatusForbidden, Code: "SOURCE_NOT_ALLOWED",
			Message: "This key's allowed_sources do not include " + sn.Source + ": it may not change alerts of that source.", Details: details}, true
	case errors.As(err, &dr):
		return Fault{Status: http.StatusConflict, Code: "DUPLICATE_RULE", Message: duplicateRule,
			Details: map[string]any{"existing_uuid": dr.Existing}}, true
	case errors.As(err, &sm):
		return Fault{Status: http.StatusUnprocessableEntity, Code: "SYSTEM_MAPPING_READONLY",
			Message: "System mappings are read-only except is_active and description.", Details: map[string]any{"fields": sm.Fields}}, true
	case errors.As(err, &br):
		return Fault{Status: http.StatusBadRequest, Code: "BUILTIN_RESTRICTED",
			Message: "Builtin providers only accept changes to is_active, auth_config, description, malice_rules, TTLs and rate_limit.",
			Details: map[string]any{"fields": br.Fields}}, true
	case errors.As(err, &nc):
		return Fault{Status: http.StatusConflict, Code: "WORKFLOW_NOT_CONFIGURED", Message: "Store the workflow's secrets before activating it.",
			Details: map[string]any{"missing_secrets": nc.Missing}}, true
	case errors.As(err, &ex):
		if f, ok := exists(ex); ok {
			return f, true
		}
	case errors.As(err, &oc):
		return Fault{Status: http.StatusConflict, Code: "ALERT_IN_OTHER_CASE",
			Message: "Alert " + oc.AlertUUID.String() + " belongs to another case; send move: true to move it.",
			Details: map[string]any{"alert_uuid": oc.AlertUUID.String(), "case_uuid": oc.CaseUUID.String()}}, true
	}
	for _, n := range named() {
		if errors.Is(err, n.err) {
			return n.f, true
		}
	}
	return Fault{}, false
}

// named are the errors the table knows by identity, in the order they are tried.
func named() []struct {
	err error
	f   Fault
} {
	const forbidden, conflict, unauthorized = http.StatusForbidden, http.StatusConflict, http.StatusUnauthorized
	return []struct {
		err error
		f   Fault
	}{
		{responses.ErrAgentCannotApprove, Fault{Status: forbidden, Code: "AGENT_CANNOT_APPROVE", Message: "Agent keys cannot approve or reject; a person must decide."}},
		{responses.ErrStepsInvalid, Fault{Status: conflict, Code: "WORKFLOW_INVALID", Message: "The stored steps no longer parse."}},
		{responses.ErrApprovalExpired, Fault{Status: conflict, Code: "APPROVAL_EXPIRED", Message: "The approval request has expired."}},
		{responses.ErrApprovalDecided, Fault{Status: conflict, Code: "APPROVAL_ALREADY_DECIDED", Message: "The approval request has already been decided."}},
		{responses.ErrResponderVoted, Fault{Status: conflict, Code: "APPROVAL_ALREADY_DECIDED", Message: "This responder has already decided this request."}},
		{responses.ErrSelfApproval, Fault{Status: forbidden, Code: "SELF_APPROVAL_FORBIDDEN", Message: "A key may not decide a run it triggered."}},
		{comments.ErrNotAuthor, Fault{Status: forbidden, Code: "NOT_COMMENT_AUTHOR", Message: "Only the key that wrote this comment may change it (an admin key may delete it)."}},
		{store.ErrDuplicateRule, Fault{Status: conflict, Code: "DUPLICATE_RULE", Message: duplicateRule}},
		{store.ErrKeyRevoked, Fault{Status: conflict, Code: "KEY_REVOKED", Message: "A revoked API key cannot be re-activated; create a new key."}},
		{enrichment.ErrBuiltinNotDeletable, Fault{Status: http.StatusBadRequest, Code: "BUILTIN_RESTRICTED", Message: "Builtin providers cannot be deleted; deactivate them instead."}},
		{enrichment.ErrSystemExtraction, Fault{Status: forbidden, Code: "SYSTEM_EXTRACTION_RESTRICTED", Message: "System extractions can only be activated or deactivated."}},
		{config.ErrNoSealer, unavailable("Credentials cannot be stored: no encryption key is configured.")},
		{responses.ErrSystemReadOnly, Fault{Status: forbidden, Code: "SYSTEM_WORKFLOW_READ_ONLY", Message: "System workflows accept only state changes."}},
		{responses.ErrSystemNotDeletable, Fault{Status: forbidden, Code: "SYSTEM_WORKFLOW", Message: "System workflows cannot be deleted; set state to inactive instead."}},
		{agents.ErrAgentInactive, Fault{Status: http.StatusUnprocessableEntity, Code: "AGENT_INACTIVE", Message: "The agent is not active; activate it before dispatching to it."}},
		{responses.ErrRunFinal, Fault{Status: conflict, Code: "RUN_NOT_CANCELLABLE", Message: "The run has already ended."}},
		{responses.ErrDecideToken, Fault{Status: forbidden, Code: "INVALID_DECIDE_TOKEN", Message: "This approval link is invalid or has already been used."}},
		{store.ErrNotFound, Fault{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "Resource not found."}},
		{store.ErrConflict, Fault{Status: conflict, Code: "CONFLICT", Message: "The request conflicts with an existing resource."}},
		// The request's deadline passed in a dependency (an overloaded database or Temporal).
		{context.DeadlineExceeded, unavailable("A dependency did not answer in time; retry later.")},
		// Postgres cancelled a bounded read (store.boundedRead's statement_timeout): the filter was too
		// costly right now; narrowing it or retrying later helps.
		{store.ErrQueryTimeout, unavailable("The query did not finish in time; narrow the filters or retry later.")},
		{enrichment.ErrUnavailable, unavailable("Enrichment is unavailable right now; retry later.")},
		{auth.ErrKeyExpired, Fault{Status: unauthorized, Code: "KEY_EXPIRED", Message: "The API key has expired."}},
		{auth.ErrInvalidKey, Fault{Status: unauthorized, Code: "UNAUTHORIZED", Message: "The API key is invalid or revoked."}},
	}
}

// exists is the 409 of a taken configuration resource, each with its contract code.
func exists(ex *config.ExistsError) (Fault, bool) {
	f := Fault{Status: http.StatusConflict}
	switch ex.What {
	case config.TakenMapping:
		f.Code, f.Message = "MAPPING_EXISTS", "An identical indicator mapping exists."
	case config.TakenIntegration:
		f.Code, f.Message = "INTEGRATION_EXISTS", "This source already has an integration; update it instead."
		f.Details = map[string]any{"source_name": ex.Name}
	case config.TakenProvider:
		f.Code, f.Message = "DUPLICATE_PROVIDER", "A provider named "+ex.Name+" already exists."
		f.Details = map[string]any{"provider_name": ex.Name}
	case config.TakenExtraction:
		f.Code, f.Message = "DUPLICATE_EXTRACTION", "An extraction with this provider_name, indicator_type and target_key already exists."
	default:
		return Fault{}, false
	}
	return f, true
}

const duplicateRule = "A detection rule with this source_name and source_rule_id already exists."

func unavailable(msg string) Fault {
	return Fault{Status: http.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: msg}
}

// NotFound is the NOT_FOUND fault naming what was not found ("Alert" → "Alert not found.").
func NotFound(what string) Fault {
	return Fault{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: what + " not found.", Subject: what}
}

// Item is one element's error inside an answer that succeeds as a whole (a bulk change's per-alert
// result, API.md §13): its code and message, and the refused fields when the rule named them.
// A refused status move is INVALID_TRANSITION (its field error has type invalid_transition), so a
// caller can tell it from other validation failures without reading the fields.
type Item struct {
	Code, Message string
	Fields        validate.Errors
	Internal      bool // no rule names the error: the door logs it; Message is generic
}

// ItemOf answers err as an Item; subject names what a NOT_FOUND was ("Alert").
func ItemOf(err error, subject string) Item {
	f, ok := Of(err)
	if !ok {
		return Item{Code: "INTERNAL_ERROR", Message: "Internal error.", Internal: true}
	}
	it := Item{Code: f.Code, Message: f.Message, Fields: f.Fields}
	if f.Code == "NOT_FOUND" && f.Subject == "" && subject != "" {
		it.Message = subject + " not found."
	}
	if len(f.Fields) > 0 {
		msgs := make([]string, len(f.Fields))
		for i, fe := range f.Fields {
			msgs[i] = fe.Msg
			if fe.Type == "invalid_transition" {
				it.Code = "INVALID_TRANSITION"
			}
		}
		it.Message = strings.Join(msgs, " ")
	}
	return it
}
