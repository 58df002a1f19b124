package api

import (
	"encoding/json"
	"strings"

	"github.com/vigil-soc/vigil/store"
)

// Builtin system workflows: Okta and Entra ID response actions (API.md §8). They are seeded by
// SeedSystemWorkflows at start, cannot be deleted or redefined, and are active only while every
// secret they name is stored (PUT /v1/workflow-secrets/{name}):
//
//	Okta:  OKTA_ORG_URL (https://<org>.okta.com), OKTA_API_TOKEN (an SSWS API token)
//	Entra: ENTRA_TENANT_ID, ENTRA_CLIENT_ID, ENTRA_CLIENT_SECRET (app with User.ReadWrite.All,
//	       UserAuthenticationMethod.ReadWrite.All)
//
// All of them run against an account indicator (the user's login / id / UPN) or an e-mail.

const oktaAuth = `{"Authorization": "SSWS {{secrets.OKTA_API_TOKEN}}", "Accept": "application/json"}`

func oktaStep(name, method, path string, expected string) string {
	return `[{"name": "` + name + `", "method": "` + method + `", "url": "{{secrets.OKTA_ORG_URL}}/api/v1/users/{{indicator.value}}` + path +
		`", "headers": ` + oktaAuth + `, "expected_status": ` + expected + `, "timeout_seconds": 30}]`
}

const entraToken = `{"name": "token", "method": "POST", "url": "https://login.microsoftonline.com/{{secrets.ENTRA_TENANT_ID}}/oauth2/v2.0/token",
 "form_body": {"client_id": "{{secrets.ENTRA_CLIENT_ID}}", "client_secret": "{{secrets.ENTRA_CLIENT_SECRET}}",
  "scope": "https://graph.microsoft.com/.default", "grant_type": "client_credentials"}, "expected_status": [200], "timeout_seconds": 30}`

const graphAuth = `{"Authorization": "Bearer {{steps.token.response.access_token}}"}`

func entraSteps(rest string) string { return "[" + entraToken + ", " + rest + "]" }

// SystemWorkflows returns the builtin workflows to seed.
func SystemWorkflows() []store.SystemWorkflow {
	okta := []string{"OKTA_API_TOKEN", "OKTA_ORG_URL"}
	entra := []string{"ENTRA_CLIENT_ID", "ENTRA_CLIENT_SECRET", "ENTRA_TENANT_ID"}
	mk := func(key, name, desc, risk string, secrets []string, steps string) store.SystemWorkflow {
		d := desc
		return store.SystemWorkflow{Key: key, RequiredSecrets: secrets, Workflow: store.Workflow{
			Name: name, Description: &d, WorkflowType: "indicator", IndicatorTypes: []string{"account", "email"},
			Steps: json.RawMessage(steps), TimeoutSeconds: 300, RetryMaxAttempts: 3, RetryInitialIntervalSeconds: 2,
			ApprovalMode: store.ApprovalModeAlways, ApprovalTimeoutSeconds: 3600, RequiredApprovals: 1, RiskLevel: risk,
			Tags: []string{"builtin", strings.SplitN(key, ".", 2)[0]}}}
	}
	return []store.SystemWorkflow{
		mk("okta.revoke_sessions", "Okta: revoke sessions", "Clears the user's Okta sessions (DELETE /api/v1/users/{id}/sessions).", "medium", okta,
			oktaStep("revoke_sessions", "DELETE", "/sessions", "[204]")),
		mk("okta.suspend", "Okta: suspend user", "Suspends the Okta user (lifecycle/suspend).", "high", okta,
			oktaStep("suspend", "POST", "/lifecycle/suspend", "[200]")),
		mk("okta.unsuspend", "Okta: unsuspend user", "Returns a suspended Okta user to active (lifecycle/unsuspend).", "medium", okta,
			oktaStep("unsuspend", "POST", "/lifecycle/unsuspend", "[200]")),
		mk("okta.reset_password", "Okta: reset password", "Starts a password reset and e-mails the user (lifecycle/reset_password?sendEmail=true).", "high", okta,
			oktaStep("reset_password", "POST", "/lifecycle/reset_password?sendEmail=true", "[200]")),
		mk("okta.expire_password", "Okta: expire password", "Expires the password: the user must change it at next sign-in (lifecycle/expire_password).", "medium", okta,
			oktaStep("expire_password", "POST", "/lifecycle/expire_password", "[200]")),
		mk("entra.revoke_sessions", "Entra ID: revoke sessions", "Invalidates the user's refresh tokens and session cookies (revokeSignInSessions).", "medium", entra,
			entraSteps(`{"name": "revoke", "method": "POST", "url": "https://graph.microsoft.com/v1.0/users/{{indicator.value}}/revokeSignInSessions", "headers": `+graphAuth+`, "expected_status": [200]}`)),
		mk("entra.disable_account", "Entra ID: disable account", "Sets accountEnabled to false.", "high", entra,
			entraSteps(`{"name": "disable", "method": "PATCH", "url": "https://graph.microsoft.com/v1.0/users/{{indicator.value}}", "headers": `+graphAuth+`, "json_body": {"accountEnabled": false}, "expected_status": [204]}`)),
		mk("entra.enable_account", "Entra ID: enable account", "Sets accountEnabled to true.", "medium", entra,
			entraSteps(`{"name": "enable", "method": "PATCH", "url": "https://graph.microsoft.com/v1.0/users/{{indicator.value}}", "headers": `+graphAuth+`, "json_body": {"accountEnabled": true}, "expected_status": [204]}`)),
		mk("entra.reset_mfa", "Entra ID: reset MFA registration", "Removes the user's first registered Microsoft Authenticator method and revokes sessions, so the user must register MFA again at next sign-in.", "high", entra,
			entraSteps(`{"name": "methods", "method": "GET", "url": "https://graph.microsoft.com/v1.0/users/{{indicator.value}}/authentication/microsoftAuthenticatorMethods", "headers": `+graphAuth+`, "expected_status": [200]},
 {"name": "remove", "method": "DELETE", "url": "https://graph.microsoft.com/v1.0/users/{{indicator.value}}/authentication/microsoftAuthenticatorMethods/{{steps.methods.response.value.0.id}}", "headers": `+graphAuth+`, "expected_status": [204], "optional": true},
 {"name": "revoke", "method": "POST", "url": "https://graph.microsoft.com/v1.0/users/{{indicator.value}}/revokeSignInSessions", "headers": `+graphAuth+`, "expected_status": [200]}`)),
	}
}
