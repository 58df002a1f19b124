package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/store"
)

// RunStore is what the run engine reads and writes (store.Store).
type RunStore interface {
	GetWorkflowRun(ctx context.Context, id uuid.UUID) (store.WorkflowRun, error)
	GetWorkflowVersion(ctx context.Context, id uuid.UUID, version int) (store.WorkflowDefinition, error)
	GetApproval(ctx context.Context, id uuid.UUID) (store.ApprovalRequest, error)
	ExpireApproval(ctx context.Context, id uuid.UUID) (store.ApprovalRequest, error)
	StartWorkflowRun(ctx context.Context, id uuid.UUID) (store.WorkflowRun, error)
	RecordRunStep(ctx context.Context, id uuid.UUID, index int, record json.RawMessage, sealedState []byte) error
	FinishWorkflowRun(ctx context.Context, id uuid.UUID, status string, result json.RawMessage, errText *string) (store.WorkflowRun, bool, error)
	SecretSource
	AlertTemplateValues(ctx context.Context, id uuid.UUID) (map[string]any, error)
}

// RunSealer seals and opens values at rest (secretbox.Box): the workflow's secrets and a run's step
// state.
type RunSealer interface {
	Seal(plaintext []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// RunnerDeps are what the run engine needs; cmd/ builds them once per worker process.
type RunnerDeps struct {
	Store RunStore
	// Secrets opens the workflow's sealed secrets and seals the step state (nil: a run naming a
	// secret is broken, and a run has no output value).
	Secrets RunSealer
	// HTTP sends the steps' requests: the SSRF guard's client in production.
	HTTP httpsteps.Doer
}

// Runner is the response-run engine: the one owner of how a run's steps run, whatever calls it (the
// WorkflowRun workflow's activities). It re-reads the approval decision, plans the run, runs one step
// (sealed step state, for_each partial results, the secrets the workflow names and their hosts, the
// taint of what steps derived from them, masking) and finishes the run with its result (the output
// step's value, masked like the records, or the summary).
type Runner struct{ d RunnerDeps }

// NewRunner returns a run engine over deps (Store must be set).
func NewRunner(deps RunnerDeps) *Runner { return &Runner{d: deps} }

// Error types of a run's failures that retrying cannot fix (WorkflowStepRetryable: a step to retry
// after RunError.RetryAfter).
const (
	ErrTypeWorkflowStepPermanent = "WorkflowStepPermanent"
	ErrTypeRunBroken             = "WorkflowRunBroken"
	ErrTypeWorkflowStepRetryable = "WorkflowStepRetryable"
)

// RunError is a run's failure of a type (ErrType*): non-retryable unless Retryable, which a caller
// retries after RetryAfter. Other errors the Runner returns are retryable as they are.
type RunError struct {
	Type       string
	Message    string
	Retryable  bool
	RetryAfter time.Duration
	Cause      error
}

func (e *RunError) Error() string { return e.Message }
func (e *RunError) Unwrap() error { return e.Cause }

// runBroken is a non-retryable failure of type ErrTypeRunBroken.
func runBroken(msg string, cause error) *RunError {
	return &RunError{Type: ErrTypeRunBroken, Message: msg, Cause: cause}
}

// notFoundBroken: a missing row breaks the run; any other error is retried.
func notFoundBroken(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return runBroken(what+": not found", err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// RunGateInput asks for the decision on a run's approval request; Expire says the run's durable
// timer reached expires_at, so a still-pending request is expired first.
type RunGateInput struct {
	RunUUID uuid.UUID `json:"run_uuid"`
	Expire  bool      `json:"expire"`
}

// RunGateResult is the approval status as committed in Postgres, and the run's status.
type RunGateResult struct {
	ApprovalStatus string `json:"approval_status"`
	RunStatus      string `json:"run_status"`
}

// Gate re-reads the run's approval decision from Postgres (the source of truth: signals only say
// "look again"), expiring a still-pending request when in.Expire is set.
func (r *Runner) Gate(ctx context.Context, in RunGateInput) (RunGateResult, error) {
	run, err := r.d.Store.GetWorkflowRun(ctx, in.RunUUID)
	if err != nil {
		return RunGateResult{}, notFoundBroken(err, "load run")
	}
	if run.ApprovalRequestUUID == nil {
		return RunGateResult{}, runBroken("run has no approval request", nil)
	}
	var ap store.ApprovalRequest
	if in.Expire {
		ap, err = r.d.Store.ExpireApproval(ctx, *run.ApprovalRequestUUID)
	} else {
		ap, err = r.d.Store.GetApproval(ctx, *run.ApprovalRequestUUID)
	}
	if err != nil {
		return RunGateResult{}, notFoundBroken(err, "load approval")
	}
	return RunGateResult{ApprovalStatus: ap.Status, RunStatus: run.Status}, nil
}

// RunPlan is what the workflow needs to schedule a run's steps: no secrets, no indicator values.
type RunPlan struct {
	RunStatus              string   `json:"run_status"`
	StepNames              []string `json:"step_names"`
	StepTimeoutSeconds     []int    `json:"step_timeout_seconds"`
	TimeoutSeconds         int      `json:"timeout_seconds"`
	MaxAttempts            int      `json:"max_attempts"`
	InitialIntervalSeconds int      `json:"initial_interval_seconds"`
}

// Start moves the run to running (unless it already ended, e.g. cancelled) and returns the plan of
// the workflow version it runs.
func (r *Runner) Start(ctx context.Context, runID uuid.UUID) (RunPlan, error) {
	run, err := r.d.Store.StartWorkflowRun(ctx, runID)
	if err != nil {
		return RunPlan{}, notFoundBroken(err, "start run")
	}
	if run.Status != store.RunRunning {
		return RunPlan{RunStatus: run.Status}, nil
	}
	def, cfg, err := r.definition(ctx, run)
	if err != nil {
		return RunPlan{}, err
	}
	plan := RunPlan{RunStatus: run.Status, TimeoutSeconds: def.TimeoutSeconds, MaxAttempts: def.RetryMaxAttempts,
		InitialIntervalSeconds: def.RetryInitialIntervalSeconds}
	for _, st := range cfg.Steps {
		plan.StepNames = append(plan.StepNames, st.Name)
		t := st.TimeoutSeconds
		if st.ForEach != "" { // timeout_seconds bounds each item; the step is one activity
			t *= httpsteps.MaxForEachItems
		}
		plan.StepTimeoutSeconds = append(plan.StepTimeoutSeconds, t)
	}
	return plan, nil
}

func (r *Runner) definition(ctx context.Context, run store.WorkflowRun) (store.WorkflowDefinition, httpsteps.Config, error) {
	def, err := r.d.Store.GetWorkflowVersion(ctx, run.WorkflowUUID, run.WorkflowVersion)
	if err != nil {
		return def, httpsteps.Config{}, notFoundBroken(err, "load workflow version")
	}
	cfg, err := ParseSteps(def.Steps)
	if err != nil {
		return def, cfg, runBroken(err.Error(), err)
	}
	return def, cfg, nil
}

// RunStepInput names one step of a run.
type RunStepInput struct {
	RunUUID uuid.UUID `json:"run_uuid"`
	Index   int       `json:"index"`
}

// RunStepResult is what the workflow learns of a step: no response bodies, no secrets.
type RunStepResult struct {
	StepName  string `json:"step_name"`
	Status    int    `json:"status"`
	Skipped   bool   `json:"skipped"`
	NotFound  bool   `json:"not_found"`
	Cancelled bool   `json:"cancelled"` // the run was cancelled: the step was not sent
	Replayed  bool   `json:"replayed"`  // already recorded by an earlier attempt: not sent again
	// Decisions, shown in the Temporal UI: the step's kind when code, how many for_each items it
	// ran (or skipped), and why it was skipped (when is not true, no items).
	Kind       string `json:"kind,omitempty"`
	Items      int    `json:"items,omitempty"`
	SkipReason string `json:"skip_reason,omitempty"`
}

// runStepState is the unmasked steps.<name>.* values of the steps done so far, sealed at rest.
type runStepState map[string]any

// Step sends step in.Index of the run and records it (seed §2.7 shape, secrets masked). A step
// already recorded as done (or skipped) is not sent again. The run's steps see only the secrets the
// workflow names. Permanent failures (4xx, unexpected status, a step that cannot be rendered) are
// non-retryable RunErrors; 5xx, 429 and network errors are retryable.
func (r *Runner) Step(ctx context.Context, in RunStepInput) (RunStepResult, error) {
	run, err := r.d.Store.GetWorkflowRun(ctx, in.RunUUID)
	if err != nil {
		return RunStepResult{}, notFoundBroken(err, "load run")
	}
	if run.Status != store.RunRunning {
		return RunStepResult{Cancelled: true}, nil
	}
	if rec, ok := recordedStep(run.Steps, in.Index); ok && (rec.Error == "" || rec.Skipped) {
		return RunStepResult{StepName: rec.StepName, Status: rec.ResponseStatusCode, Skipped: rec.Skipped, Replayed: true}, nil
	}
	_, cfg, err := r.definition(ctx, run)
	if err != nil {
		return RunStepResult{}, err
	}
	if in.Index < 0 || in.Index >= len(cfg.Steps) {
		return RunStepResult{}, runBroken(fmt.Sprintf("step %d out of range", in.Index), nil)
	}
	state := runStepState{}
	if len(run.StepState) > 0 {
		plain, err := r.d.Secrets.Open(run.StepState)
		if err != nil {
			return RunStepResult{}, runBroken("open step state: "+err.Error(), nil)
		}
		dec := json.NewDecoder(bytes.NewReader(plain))
		dec.UseNumber()
		if err := dec.Decode(&state); err != nil {
			return RunStepResult{}, runBroken("decode step state", nil)
		}
	}
	vars, opened, err := r.vars(ctx, run, cfg)
	if err != nil {
		return RunStepResult{}, err
	}
	partial := state.takePartial()
	vars["steps"] = map[string]any(state)
	// What earlier steps received in exchange for a secret is masked like the secret in this record.
	mask := append(append([]string(nil), opened.Values...), cfg.DerivedSecretValues(state)...)
	st := cfg.Steps[in.Index]
	if st.HasDecisions() {
		return r.decidingStep(ctx, run, cfg, in.Index, vars, state, partial, opened, mask)
	}
	p, err := httpsteps.BuildRequest(cfg, in.Index, vars)
	if err != nil {
		rec := httpsteps.FailedRecord(cfg, in.Index, run.IndicatorValue, err)
		rec.Error = httpsteps.NewMasker(mask).String(rec.Error)
		if st.Optional {
			rec.Skipped = true
			return RunStepResult{StepName: st.Name, Skipped: true}, r.recordSkipped(ctx, run.UUID, in.Index, rec, state, partial, st.Name)
		}
		if rerr := r.recordStep(ctx, run.UUID, in.Index, rec, nil); rerr != nil {
			return RunStepResult{}, rerr
		}
		return RunStepResult{}, &RunError{Type: ErrTypeWorkflowStepPermanent, Message: rec.Error}
	}
	approved, err := r.approved(ctx, run, cfg, in.Index)
	if err != nil {
		return RunStepResult{}, err
	}
	out, err := httpsteps.NewRunner(r.d.HTTP, httpsteps.WithHostPolicy(opened.Hosts), httpsteps.WithApprovedRun(approved)).Do(ctx, p, mask...)
	if err != nil {
		if st.Optional {
			out.MarkSkipped(err)
			return RunStepResult{StepName: st.Name, Status: out.Status, Skipped: true}, r.recordSkipped(ctx, run.UUID, in.Index, out.Record, state, partial, st.Name)
		}
		if rerr := r.recordStep(ctx, run.UUID, in.Index, out.Record, nil); rerr != nil {
			return RunStepResult{}, rerr
		}
		return RunStepResult{}, stepFailure(err, out.Record.Error)
	}
	state[st.Name] = out.Vars()
	sealed, err := r.sealState(state, partial)
	if err != nil {
		return RunStepResult{}, err
	}
	if err := r.recordStep(ctx, run.UUID, in.Index, out.Record, sealed); err != nil {
		return RunStepResult{}, err
	}
	return RunStepResult{StepName: st.Name, Status: out.Status, NotFound: out.NotFound}, nil
}

// stepFailure is a failed step's error, msg its masked record's: retryable (after the server's
// Retry-After when it gave one) or permanent as httpsteps classified it.
func stepFailure(err error, msg string) error {
	if httpsteps.IsRetryable(err) {
		if d, ok := httpsteps.RetryAfter(err); ok {
			return &RunError{Type: ErrTypeWorkflowStepRetryable, Message: msg, Retryable: true, RetryAfter: d}
		}
		return errors.New(msg)
	}
	return &RunError{Type: ErrTypeWorkflowStepPermanent, Message: msg}
}

// ProgressInterval is how often a for_each HTTP step saves the items it has sent.
const ProgressInterval = 250 * time.Millisecond

// partialKey holds, in a run's sealed step state, the for_each items of a step that an attempt
// already ran (step name -> item index -> httpsteps.ItemDone), so a retried step does not send them
// again. No step name can take it.
const partialKey = "#partial"

type partialItems map[string]map[string]httpsteps.ItemDone

// takePartial removes the partial items from the state (so steps never see them) and returns them.
func (s runStepState) takePartial() partialItems {
	raw, ok := s[partialKey]
	delete(s, partialKey)
	out := partialItems{}
	if !ok {
		return out
	}
	b, err := json.Marshal(raw)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		_ = dec.Decode(&out)
	}
	return out
}

// sealState seals the steps namespace, with the partial items when there are any.
func (r *Runner) sealState(state runStepState, partial partialItems) ([]byte, error) {
	full := map[string]any(state)
	if len(partial) > 0 {
		full = maps.Clone(full)
		full[partialKey] = partial
	}
	plain, err := json.Marshal(full)
	if err != nil {
		return nil, fmt.Errorf("encode step state: %w", err)
	}
	sealed, err := r.d.Secrets.Seal(plain)
	if err != nil {
		return nil, fmt.Errorf("seal step state: %w", err)
	}
	return sealed, nil
}

// recordSkipped records a skipped step and its entry in the steps namespace (status 0, skipped
// true), so later expressions can ask steps.<name>.skipped.
func (r *Runner) recordSkipped(ctx context.Context, id uuid.UUID, index int, rec httpsteps.StepRecord, state runStepState, partial partialItems, name string) error {
	state[name] = map[string]any{"status": 0, "response": nil, "headers": map[string]any{}, "result": nil, "skipped": true}
	delete(partial, name)
	sealed, err := r.sealState(state, partial)
	if err != nil {
		return err
	}
	return r.recordStep(ctx, id, index, rec, sealed)
}

// decidingStep runs a step with when, for_each or kind code through httpsteps.Runner.RunStep:
// expressions and code are evaluated here, in the activity, so the step's outcome is recorded once
// (on the run and in the Temporal history) and a replay never evaluates them again. HTTP items
// already sent by an earlier attempt are not sent again.
func (r *Runner) decidingStep(ctx context.Context, run store.WorkflowRun, cfg httpsteps.Config, index int, vars map[string]any,
	state runStepState, partial partialItems, opened Opened, mask []string) (RunStepResult, error) {
	st := cfg.Steps[index]
	resume := map[int]httpsteps.ItemDone{}
	for k, d := range partial[st.Name] {
		if n, err := strconv.Atoi(k); err == nil {
			resume[n] = d
		}
	}
	var lastSaved time.Time
	progress := func(k int, d httpsteps.ItemDone) error {
		if partial[st.Name] == nil {
			partial[st.Name] = map[string]httpsteps.ItemDone{}
		}
		partial[st.Name][strconv.Itoa(k)] = d
		// Saved at most every ProgressInterval (a commit per item would cost more than the items):
		// a failed item saves them all below; only a worker crash can resend the last interval's.
		if time.Since(lastSaved) < ProgressInterval {
			return nil
		}
		lastSaved = time.Now()
		sealed, err := r.sealState(state, partial)
		if err != nil {
			return err
		}
		rec := httpsteps.FailedRecord(cfg, index, run.IndicatorValue, nil)
		rec.ForEach, rec.Error = st.ForEach, fmt.Sprintf("running: %d items sent so far", len(partial[st.Name]))
		return r.recordStep(ctx, run.UUID, index, rec, sealed)
	}
	approved, err := r.approved(ctx, run, cfg, index)
	if err != nil {
		return RunStepResult{}, err
	}
	out, err := httpsteps.NewRunner(r.d.HTTP, httpsteps.WithHostPolicy(opened.Hosts), httpsteps.WithApprovedRun(approved)).RunStep(ctx, cfg, index, vars, mask, resume, progress)
	res := RunStepResult{StepName: st.Name, Status: out.Status, Skipped: out.Skipped, NotFound: out.NotFound && st.ForEach == "",
		Kind: out.Record.Kind, Items: len(out.Record.Items), SkipReason: out.Record.SkipReason}
	if err != nil {
		var sealed []byte
		if len(partial[st.Name]) > 0 { // the items sent so far, so a retry resumes after them
			var serr error
			if sealed, serr = r.sealState(state, partial); serr != nil {
				return RunStepResult{}, serr
			}
		}
		if rerr := r.recordStep(ctx, run.UUID, index, out.Record, sealed); rerr != nil {
			return RunStepResult{}, rerr
		}
		return RunStepResult{}, stepFailure(err, out.Record.Error)
	}
	state[st.Name] = out.Vars
	delete(partial, st.Name)
	sealed, err := r.sealState(state, partial)
	if err != nil {
		return RunStepResult{}, err
	}
	if err := r.recordStep(ctx, run.UUID, index, out.Record, sealed); err != nil {
		return RunStepResult{}, err
	}
	return res, nil
}

// approved reports whether a person approved the run, read from Postgres, when step index needs to
// know (it carries a secret only as a condition: httpsteps.WithApprovedRun); false otherwise.
func (r *Runner) approved(ctx context.Context, run store.WorkflowRun, cfg httpsteps.Config, index int) (bool, error) {
	if refs, _ := cfg.StepConditionTaint(index); len(refs) == 0 || run.ApprovalRequestUUID == nil {
		return false, nil
	}
	ap, err := r.d.Store.GetApproval(ctx, *run.ApprovalRequestUUID)
	if err != nil {
		return false, notFoundBroken(err, "load approval")
	}
	return ap.Status == store.ApprovalApproved, nil
}

// vars builds the template root: indicator, alert (when the run has one) and only the secrets the
// workflow names. It also returns the opened secrets (values to mask, their host policy).
func (r *Runner) vars(ctx context.Context, run store.WorkflowRun, cfg httpsteps.Config) (map[string]any, Opened, error) {
	vars := map[string]any{"indicator": map[string]any{"type": run.IndicatorType, "value": run.IndicatorValue}}
	if run.AlertUUID != nil {
		alert, err := r.d.Store.AlertTemplateValues(ctx, *run.AlertUUID)
		if err != nil {
			return nil, Opened{}, fmt.Errorf("load alert: %w", err)
		}
		vars["alert"] = alert
	}
	var opener SecretOpener
	if r.d.Secrets != nil {
		opener = r.d.Secrets
	}
	opened, err := OpenSecrets(ctx, r.d.Store, opener, SecretNames(cfg))
	var openErr *SecretOpenError
	if errors.As(err, &openErr) || errors.Is(err, ErrUnavailable) {
		return nil, Opened{}, runBroken(err.Error(), nil)
	}
	if err != nil {
		return nil, Opened{}, err
	}
	vars["secrets"] = opened.Vars
	return vars, opened, nil
}

func (r *Runner) recordStep(ctx context.Context, id uuid.UUID, index int, rec httpsteps.StepRecord, sealedState []byte) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode step record: %w", err)
	}
	if err := r.d.Store.RecordRunStep(ctx, id, index, raw, sealedState); err != nil {
		return fmt.Errorf("record step %d: %w", index, err)
	}
	return nil
}

func recordedStep(steps json.RawMessage, index int) (httpsteps.StepRecord, bool) {
	var list []*httpsteps.StepRecord
	if err := json.Unmarshal(steps, &list); err != nil || index >= len(list) || list[index] == nil {
		return httpsteps.StepRecord{}, false
	}
	return *list[index], true
}

// FinishRunInput ends a run.
type FinishRunInput struct {
	RunUUID uuid.UUID `json:"run_uuid"`
	Status  string    `json:"status"`
	Error   string    `json:"error,omitempty"`
}

// Finish records the run's final status, result and workflow_run.completed once; a run that
// already ended (cancelled meanwhile) keeps its status, which is returned.
func (r *Runner) Finish(ctx context.Context, in FinishRunInput) (string, error) {
	run, err := r.d.Store.GetWorkflowRun(ctx, in.RunUUID)
	if err != nil {
		return "", notFoundBroken(err, "load run")
	}
	var steps []*httpsteps.StepRecord
	_ = json.Unmarshal(run.Steps, &steps)
	done, skipped := 0, 0
	for _, s := range steps {
		switch {
		case s == nil:
		case s.Skipped:
			skipped++
		case s.Error == "":
			done++
		}
	}
	result, err := json.Marshal(map[string]any{"status": in.Status, "success": in.Status == store.RunSucceeded,
		"steps_total": len(steps), "steps_succeeded": done, "steps_skipped": skipped})
	if err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	if out, ok, err := r.outputValue(ctx, run); err != nil {
		return "", err
	} else if ok {
		result = out
	}
	var errText *string
	if in.Error != "" {
		errText = &in.Error
	}
	stored, _, err := r.d.Store.FinishWorkflowRun(ctx, in.RunUUID, in.Status, result, errText)
	if err != nil {
		return "", err
	}
	return stored.Status, nil
}

// MaxRunResultBytes bounds a run's result: an output step's value larger than this is not kept.
const MaxRunResultBytes = 1 << 20

// outputValue is the value of the run's step named output when the workflow has one and it ran
// (code: its result; HTTP: its response; for_each: the list of them), masked like the step records
// (the workflow's secrets and what steps received for them). ok is false otherwise: the run's result
// is then its summary.
func (r *Runner) outputValue(ctx context.Context, run store.WorkflowRun) (json.RawMessage, bool, error) {
	if len(run.StepState) == 0 || r.d.Secrets == nil {
		return nil, false, nil
	}
	_, cfg, err := r.definition(ctx, run)
	if err != nil {
		return nil, false, nil // a broken definition has no output: the summary stands
	}
	idx := slices.IndexFunc(cfg.Steps, func(st httpsteps.Step) bool { return st.Name == OutputStep })
	if idx < 0 {
		return nil, false, nil
	}
	plain, err := r.d.Secrets.Open(run.StepState)
	if err != nil {
		return nil, false, runBroken("open step state: "+err.Error(), nil)
	}
	state := runStepState{}
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.UseNumber()
	if err := dec.Decode(&state); err != nil {
		return nil, false, runBroken("decode step state", nil)
	}
	state.takePartial()
	entry, ok := state[OutputStep].(map[string]any)
	if !ok || entry["skipped"] == true {
		return nil, false, nil
	}
	val := entry["response"]
	if cfg.Steps[idx].IsCode() {
		val = entry["result"]
	}
	opened, err := OpenSecrets(ctx, r.d.Store, r.d.Secrets, SecretNames(cfg))
	if err != nil {
		return nil, false, fmt.Errorf("open secrets to mask the output: %w", err)
	}
	masked := cfg.RecordOutput(idx, val, httpsteps.NewMasker(append(append([]string(nil), opened.Values...), cfg.DerivedSecretValues(state)...)))
	raw, err := json.Marshal(masked)
	if err != nil {
		return nil, false, fmt.Errorf("encode output: %w", err)
	}
	if len(raw) > MaxRunResultBytes {
		raw, _ = json.Marshal(map[string]any{"error": fmt.Sprintf("the output step's value is %d bytes, more than the %d kept", len(raw), MaxRunResultBytes)})
	}
	return raw, true, nil
}
