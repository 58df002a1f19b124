package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/approvals"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// ParseSteps parses a workflow's stored steps list with the HTTP engine.
func ParseSteps(steps json.RawMessage) (httpsteps.Config, error) {
	raw, err := json.Marshal(map[string]json.RawMessage{"steps": steps})
	if err != nil {
		return httpsteps.Config{}, fmt.Errorf("encode steps: %w", err)
	}
	cfg, verrs := httpsteps.ParseWorkflowConfig(raw)
	if len(verrs) > 0 {
		return httpsteps.Config{}, fmt.Errorf("parse workflow steps: %w", verrs)
	}
	return cfg, nil
}

// OutputStep is the name of the step whose value is a run's result (API.md §8).
const OutputStep = "output"

// SecretNames returns the secrets cfg names ({{secrets.NAME}}), sorted, never nil.
func SecretNames(cfg httpsteps.Config) []string {
	out := []string{}
	for _, v := range cfg.Variables() {
		if name, ok := strings.CutPrefix(v, "secrets."); ok {
			name, _, _ = strings.Cut(name, ".")
			if len(out) == 0 || out[len(out)-1] != name {
				out = append(out, name)
			}
		}
	}
	return out
}

// SecretNamePattern is what a workflow secret's name matches.
const SecretNamePattern = `^[A-Z][A-Z0-9_]{0,63}$`

var secretNameRE = regexp.MustCompile(SecretNamePattern)

// ValidSecretName reports whether name is a valid workflow secret name (SecretNamePattern).
func ValidSecretName(name string) bool { return secretNameRE.MatchString(name) }

// WorkflowSecretNames lists the secrets a stored steps list names (none when it does not parse).
func WorkflowSecretNames(steps json.RawMessage) []string {
	cfg, err := ParseSteps(steps)
	if err != nil {
		return []string{}
	}
	return SecretNames(cfg)
}

// SecretSource returns the sealed values and the allowed hosts of the named secrets that exist.
type SecretSource interface {
	SealedWorkflowSecrets(ctx context.Context, names []string) (map[string][]byte, error)
	WorkflowSecretHosts(ctx context.Context, names []string) (map[string][]string, error)
}

// SecretOpenError: a stored secret could not be opened (wrong ENCRYPTION_KEY or a damaged value).
type SecretOpenError struct {
	Name string
	Err  error
}

func (e *SecretOpenError) Error() string { return "open secret " + e.Name + ": " + e.Err.Error() }
func (e *SecretOpenError) Unwrap() error { return e.Err }

// Opened is what a workflow is given of the secrets it names.
type Opened struct {
	Vars   map[string]any       // the secrets.* template namespace
	Values []string             // the plaintexts, to mask them in records
	Hosts  httpsteps.HostPolicy // where each may be sent (its allowed_hosts), for the step runner
}

// OpenSecrets returns the plaintext of the named secrets that exist, as the secrets.* template
// namespace, as a list (to mask them in records) and as the host policy that binds each to its
// allowed_hosts. A workflow gets only the secrets it names, and a step can send one only to its
// hosts: the one rule shared by dry runs and the WorkflowRun activities.
func OpenSecrets(ctx context.Context, src SecretSource, opener SecretOpener, names []string) (Opened, error) {
	out := Opened{Vars: map[string]any{}, Hosts: httpsteps.HostPolicy{}}
	if len(names) == 0 {
		return out, nil
	}
	if opener == nil {
		return Opened{}, unavailable("Secrets are not available: ENCRYPTION_KEY is not configured.")
	}
	sealed, err := src.SealedWorkflowSecrets(ctx, names)
	if err != nil {
		return Opened{}, err
	}
	hosts, err := src.WorkflowSecretHosts(ctx, names)
	if err != nil {
		return Opened{}, err
	}
	for name, v := range sealed {
		plain, err := opener.Open(v)
		if err != nil {
			return Opened{}, &SecretOpenError{Name: name, Err: err}
		}
		out.Vars[name] = string(plain)
		out.Values = append(out.Values, string(plain))
		out.Hosts["secrets."+name] = netguard.NewHostList(hosts[name])
	}
	return out, nil
}

// MockResponse answers one step of a mock dry run.
type MockResponse struct {
	StatusCode *int // default: the step's first expected status
	Headers    map[string]string
	Body       any // JSON value; a string is sent as text
}

// TestRequest asks for a dry run of a workflow.
type TestRequest struct {
	WorkflowUUID   uuid.UUID
	IndicatorType  string
	IndicatorValue string
	AlertUUID      *uuid.UUID
	Mocks          map[string]MockResponse // by step name
	LiveHTTP       bool                    // real requests (admin only), recorded as workflow.tested_live
}

// TestResult is a dry run's outcome.
type TestResult struct {
	WorkflowName string
	Result       httpsteps.Result
}

// ErrStepsInvalid: the stored steps no longer parse (409 WORKFLOW_INVALID).
var ErrStepsInvalid = fmt.Errorf("the stored steps no longer parse")

// Test dry-runs a workflow: its steps rendered with the indicator, the alert and the secrets it
// names, sent through the one httpsteps runner — answered by the mocks, or, with LiveHTTP, sent for
// real through the SSRF-guarded step client. No run row and no gate: so a live dry run, which sends
// the workflow's secrets, is admin only (ForbiddenError otherwise) and recorded as activity
// workflow.tested_live with the actor's key prefix before anything is sent.
func (s *Service) Test(ctx context.Context, actor Actor, req TestRequest) (TestResult, error) {
	if req.LiveHTTP && !actor.isAdmin() {
		return TestResult{}, &ForbiddenError{Scopes: []string{auth.ScopeAdmin}, Reason: "A live dry run sends real requests with the workflow's secrets: it needs the admin scope."}
	}
	st := s.deps.Store
	w, err := st.GetWorkflow(ctx, req.WorkflowUUID)
	if err != nil {
		return TestResult{}, notFoundAs(err, "Workflow")
	}
	cfg, err := ParseSteps(w.Steps)
	if err != nil {
		return TestResult{}, ErrStepsInvalid
	}
	vars := map[string]any{"indicator": map[string]any{"type": req.IndicatorType, "value": strings.TrimSpace(req.IndicatorValue)}}
	if req.AlertUUID != nil {
		alert, err := st.AlertTemplateValues(ctx, *req.AlertUUID)
		if err != nil {
			return TestResult{}, notFoundAs(err, "Alert")
		}
		vars["alert"] = alert
	}
	var doer httpsteps.Doer = mockDoer{mocks: req.Mocks}
	if req.LiveHTTP {
		if s.deps.StepClient == nil {
			return TestResult{}, unavailable("Live HTTP is not available on this server.")
		}
		doer = s.deps.StepClient
	}
	opened, err := OpenSecrets(ctx, st, s.deps.Secrets, SecretNames(cfg))
	if err != nil {
		return TestResult{}, err
	}
	vars["secrets"] = opened.Vars
	if req.LiveHTTP {
		wf := w.UUID
		prefix := actor.KeyPrefix
		if err := st.RecordActivity(ctx, nil, &store.ActivityEvent{EventType: "workflow.tested_live", ActorType: actor.actorType(),
			ActorKeyPrefix: &prefix, WorkflowUUID: &wf, References: map[string]any{"workflow_version": w.Version,
				"indicator_type": req.IndicatorType, "key_name": actor.KeyName}}); err != nil {
			return TestResult{}, err
		}
	}
	// A step carrying a secret only as a condition may leave its hosts in an approved run: a dry run shows
	// what a run by this caller would do, approved when its runs wait for a person.
	approved := approvals.Needed(w.ApprovalMode, actor.TriggerSource())
	res := httpsteps.NewRunner(doer, httpsteps.WithHostPolicy(opened.Hosts), httpsteps.WithApprovedRun(approved)).Run(ctx, cfg, vars, opened.Values)
	return TestResult{WorkflowName: w.Name, Result: res}, nil
}

// mockDoer answers each step's request with its mock response (by step name).
type mockDoer struct{ mocks map[string]MockResponse }

func (m mockDoer) Do(req *http.Request) (*http.Response, error) {
	p, ok := httpsteps.StepOf(req.Context())
	if !ok {
		return nil, fmt.Errorf("mock dry run: request without a step")
	}
	mock := m.mocks[p.StepName]
	status := 200
	if len(p.ExpectedStatus) > 0 {
		status = p.ExpectedStatus[0]
	}
	if mock.StatusCode != nil {
		status = *mock.StatusCode
	}
	var body []byte
	switch b := mock.Body.(type) {
	case nil:
	case string:
		body = []byte(b)
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			return nil, fmt.Errorf("encode mock body: %w", err)
		}
	}
	h := http.Header{}
	for k, v := range mock.Headers {
		h.Set(k, v)
	}
	if h.Get("Content-Type") == "" && mock.Body != nil {
		if _, isText := mock.Body.(string); !isText {
			h.Set("Content-Type", "application/json")
		}
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: req,
		ContentLength: int64(len(body))}, nil
}

// MaxAllowedHosts bounds a secret's allowed_hosts.
const MaxAllowedHosts = 50

// ValidateAllowedHosts checks a secret's allowed_hosts (admin-set, required): 1..MaxAllowedHosts host
// patterns ("api.example.com", "*.example.com", optional ":port"). Locations are relative to the list.
func ValidateAllowedHosts(hosts []string) validate.Errors {
	var errs validate.Errors
	switch {
	case len(hosts) == 0:
		errs.Add(nil, validate.TypeTooShort, "At least one host: a secret is sent only to its allowed hosts.", nil)
	case len(hosts) > MaxAllowedHosts:
		errs.AddCtx(nil, validate.TypeTooLong, fmt.Sprintf("At most %d hosts.", MaxAllowedHosts), nil, map[string]any{"max_length": MaxAllowedHosts})
	}
	for i, h := range hosts {
		if err := netguard.ParseHostPattern(h); err != nil {
			errs.Add([]any{i}, validate.TypeValue, err.Error(), validate.Truncate(h))
		}
	}
	return errs
}

// SecretHostError: a step would put a secret into a request for a host outside its allowed_hosts
// (422 SECRET_HOST_NOT_ALLOWED when the workflow is saved).
type SecretHostError struct {
	StepIndex int
	StepName  string
	Secret    string
	Host      string
}

func (e *SecretHostError) Error() string {
	return fmt.Sprintf("step %d (%s) sends secret %s to %s, which is not in its allowed_hosts", e.StepIndex, e.StepName, e.Secret, e.Host)
}

// CheckSecretHosts refuses, when a workflow is saved, a step whose host is written out and not
// allowed for a secret the step uses. Steps whose host is a template, and secrets not stored yet, are
// checked when the step runs (httpsteps.HostPolicy).
func CheckSecretHosts(ctx context.Context, src SecretSource, cfg httpsteps.Config) error {
	names := SecretNames(cfg)
	if len(names) == 0 {
		return nil
	}
	hosts, err := src.WorkflowSecretHosts(ctx, names)
	if err != nil {
		return err
	}
	for i, st := range cfg.Steps {
		host, port, ok := httpsteps.LiteralHostPort(st.URL)
		if !ok {
			continue
		}
		for _, ref := range cfg.StepCredentialRefs(i) {
			name, isSecret := strings.CutPrefix(ref, "secrets.")
			allowed, stored := hosts[name]
			if isSecret && stored && !netguard.NewHostList(allowed).Matches(host, port) {
				return &SecretHostError{StepIndex: i, StepName: st.Name, Secret: name, Host: httpsteps.LiteralHost(st.URL)}
			}
		}
	}
	return nil
}
