package errcode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/comments"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/domain/responses"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// TestOf: every error a rule owner or the store names answers with its contract status and code,
// wrapped or not; anything else is internal.
func TestOf(t *testing.T) {
	var verrs validate.Errors
	verrs.Add([]any{"name"}, validate.TypeMissing, "Field required.", nil)
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{verrs, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{&responses.NotFoundError{What: "Workflow"}, http.StatusNotFound, "NOT_FOUND"},
		{&responses.NotActiveError{State: "draft"}, http.StatusConflict, "WORKFLOW_NOT_ACTIVE"},
		{&responses.ForbiddenError{Scopes: []string{"admin"}, Reason: "no"}, http.StatusForbidden, "FORBIDDEN"},
		{responses.ErrAgentCannotApprove, http.StatusForbidden, "AGENT_CANNOT_APPROVE"},
		{responses.ErrStepsInvalid, http.StatusConflict, "WORKFLOW_INVALID"},
		{&responses.UnavailableError{Message: "Temporal is unreachable."}, http.StatusServiceUnavailable, "UNAVAILABLE"},
		{responses.ErrApprovalExpired, http.StatusConflict, "APPROVAL_EXPIRED"},
		{responses.ErrApprovalDecided, http.StatusConflict, "APPROVAL_ALREADY_DECIDED"},
		{responses.ErrResponderVoted, http.StatusConflict, "APPROVAL_ALREADY_DECIDED"},
		{responses.ErrSelfApproval, http.StatusForbidden, "SELF_APPROVAL_FORBIDDEN"},
		{responses.ErrDecideToken, http.StatusForbidden, "INVALID_DECIDE_TOKEN"},
		{comments.ErrNotAuthor, http.StatusForbidden, "NOT_COMMENT_AUTHOR"},
		{store.ErrNotFound, http.StatusNotFound, "NOT_FOUND"},
		{store.ErrConflict, http.StatusConflict, "CONFLICT"},
		{store.ErrQueryTimeout, http.StatusServiceUnavailable, "UNAVAILABLE"},
		{context.DeadlineExceeded, http.StatusServiceUnavailable, "UNAVAILABLE"},
		{enrichment.ErrUnavailable, http.StatusServiceUnavailable, "UNAVAILABLE"},
		{auth.ErrKeyExpired, http.StatusUnauthorized, "KEY_EXPIRED"},
		{auth.ErrInvalidKey, http.StatusUnauthorized, "UNAUTHORIZED"},
	} {
		for _, err := range []error{tc.err, fmt.Errorf("decide: %w", tc.err)} {
			f, ok := Of(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, tc.status, f.Status, "%v", err)
			require.Equal(t, tc.code, f.Code, "%v", err)
			require.NotEmpty(t, f.Message, "%v", err)
		}
	}
	f, _ := Of(&responses.NotFoundError{What: "Workflow"})
	require.Equal(t, "Workflow not found.", f.Message)
	require.Equal(t, "Workflow", f.Subject)
	_, ok := Of(errors.New("disk on fire"))
	require.False(t, ok, "an error no rule names is internal")
	_, ok = Of(nil)
	require.False(t, ok)
}
