package enrichment

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/httpsteps"
	"github.com/vigil-soc/vigil/kit/indicators"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

// EngineStore is what the enrichment engine reads and writes (store.Store).
type EngineStore interface {
	GetIndicators(ctx context.Context, ids []uuid.UUID) ([]store.Indicator, error)
	ListProviders(ctx context.Context, f store.ProviderFilter) ([]store.EnrichmentProvider, int, error)
	Circuits(ctx context.Context) ([]store.Circuit, error)
	GetCachedResults(ctx context.Context, keys []store.CacheKey) (map[store.CacheKey]store.CachedResult, error)
	GetProviderForCall(ctx context.Context, name string) (store.EnrichmentProvider, store.CallCircuit, error)
	CircuitAdmit(ctx context.Context, provider string, c store.CallCircuit, p store.CircuitPolicy) (bool, error)
	ReserveProviderSlot(ctx context.Context, provider string, rl store.RateLimit) (time.Time, time.Time, error)
	CircuitFailure(ctx context.Context, provider string, p store.CircuitPolicy) (bool, error)
	CircuitSuccess(ctx context.Context, provider string) (bool, error)
	RecordEnrichment(ctx context.Context, cache []store.CacheEntry, records []store.IndicatorEnrichment) error
	GetProviderByName(ctx context.Context, name string) (store.EnrichmentProvider, error)
	ListFieldExtractions(ctx context.Context, f store.FieldExtractionFilter) ([]store.FieldExtraction, int, error)
}

// EngineDeps are what the enrichment engine needs; cmd/ builds them once per worker process.
type EngineDeps struct {
	Store EngineStore
	// Box opens sealed auth_config values and seals the state carried between steps.
	Box *secretbox.Box
	// Env looks up the environment variables env_var_mapping names (built in cmd/).
	Env store.Env
	// HTTP sends provider requests: the SSRF guard's client in production.
	HTTP httpsteps.Doer
	// Circuit is the providers' circuit-breaker policy (zero: store.DefaultCircuitPolicy).
	Circuit store.CircuitPolicy
}

// Engine runs the enrichment of indicators in three parts that the enrichment workflows call as
// activities (docs/ENRICHMENT-ENGINE.md): Plan (what is known, what must be called), Step (one HTTP
// step of one provider call, under the provider's rate limit and circuit breaker) and Record (the
// results: extractions, malice rules, the cache, the indicators).
type Engine struct {
	d   EngineDeps
	log *slog.Logger
}

// NewEngine returns an engine over deps (Store and Box must be set); log (nil: no logging) hears
// when a provider's circuit opens or closes.
func NewEngine(deps EngineDeps, log *slog.Logger) *Engine { return &Engine{d: deps, log: log} }

// CircuitOpenMessage is the error of a call refused (or not planned) because the provider's circuit
// is open; the alert is re-run once the provider answers again.
const CircuitOpenMessage = "provider circuit open: calls paused after repeated failures; the alert is re-enriched when the provider answers again"

func (d *EngineDeps) circuitPolicy() store.CircuitPolicy {
	if d.Circuit.Failures <= 0 {
		return store.DefaultCircuitPolicy()
	}
	return d.Circuit
}

// Limits of the engine.
const (
	// SlotLateTolerance is how late after its reserved slot a request may still leave.
	SlotLateTolerance = 50 * time.Millisecond
	// maxSlotAttempts bounds re-reservations of missed slots within one activity attempt.
	maxSlotAttempts = 5
	// InlineSlotWait is how far ahead a reserved rate-limit slot may lie and still be waited for inside
	// the step activity; longer waits go back to the workflow as a durable timer that wakes this much
	// before the slot, so the request itself leaves on time.
	InlineSlotWait = time.Second
	// MaxEnrichResponseBytes bounds a provider response (the state handed to later steps must fit a
	// Temporal payload).
	MaxEnrichResponseBytes = 1 << 20
	// DefaultRateLimitWait is the wait after a 429 without a usable Retry-After.
	DefaultRateLimitWait = 5 * time.Second
)

// Plan (the EnrichPlan local activity) loads the targets and providers and decides, per target and provider,
// whether the result is already known (cache hit, non-routable value skipped) or a call is needed.
// Unconfigured and inactive providers are left out without error (in test mode a provider that
// cannot run is reported as failed).
func (e *Engine) Plan(ctx context.Context, in PlanInput) (Plan, error) {
	d := &e.d
	var plan Plan
	if len(in.IndicatorUUIDs) > 0 {
		ids := make([]uuid.UUID, 0, len(in.IndicatorUUIDs))
		for _, s := range in.IndicatorUUIDs {
			id, err := uuid.Parse(s)
			if err != nil {
				return Plan{}, permanent(ErrTypeBadInput, "invalid indicator uuid "+s, err, nil)
			}
			ids = append(ids, id)
		}
		inds, err := d.Store.GetIndicators(ctx, ids)
		if err != nil {
			return Plan{}, fmt.Errorf("enrich plan: %w", err)
		}
		for _, ind := range inds {
			plan.Targets = append(plan.Targets, Target{IndicatorUUID: ind.UUID.String(), Type: ind.Type, Value: ind.Value})
		}
	}
	if in.AdHoc != nil {
		plan.Targets = append(plan.Targets, *in.AdHoc)
	}
	if len(plan.Targets) == 0 {
		return plan, nil
	}
	filter := store.ProviderFilter{Names: in.Providers}
	if !in.Test {
		active := true
		filter.IsActive = &active
	}
	providers, _, err := d.Store.ListProviders(ctx, filter)
	if err != nil {
		return Plan{}, fmt.Errorf("enrich plan: %w", err)
	}
	// Providers whose circuit is open and not due for its half-open probe are not called at all
	// (the provider test endpoint bypasses the breaker).
	refused := map[string]bool{}
	if !in.Test && len(providers) > 0 { // no provider active (issue 26's common case): no circuit to read
		circuits, err := d.Store.Circuits(ctx)
		if err != nil {
			return Plan{}, fmt.Errorf("enrich plan: %w", err)
		}
		for _, c := range circuits {
			refused[c.ProviderName] = c.Open() && !c.Due
		}
	}
	// Each (target, provider) pair that needs neither a call nor the cache is decided at once; the
	// cache is then read for every pair left in one query (none for a test or SkipCache).
	type pair struct {
		ti int
		p  store.EnrichmentProvider
	}
	var pending []pair
	var keys []store.CacheKey
	useCache := !in.Test && !in.SkipCache
	for ti, t := range plan.Targets {
		for _, p := range providers {
			decided := func(r Answer) { plan.Done = append(plan.Done, Outcome{Target: ti, Result: r}) }
			if !p.Supports(t.Type) {
				if in.Test {
					decided(enrichFailedResult(p.ProviderName, fmt.Sprintf("provider %s does not support indicator type %s", p.ProviderName, t.Type)))
				}
				continue
			}
			configured := p.IsConfigured(d.Env)
			if in.Test {
				configured = p.AuthType == store.AuthNone || p.HasCredentials(d.Env)
			}
			if !configured {
				if in.Test {
					decided(enrichFailedResult(p.ProviderName, "provider has no credentials configured"))
				}
				continue
			}
			if reason, skip := netguard.NonRoutable(t.Type, t.Value); skip {
				decided(Answer{Provider: p.ProviderName, Status: store.EnrichSkipped,
					Malice: string(indicators.MalicePending), Extracted: map[string]any{}, ErrorMessage: reason})
				continue
			}
			if useCache {
				keys = append(keys, store.CacheKey{Provider: p.ProviderName, Type: t.Type, Value: t.Value})
			}
			pending = append(pending, pair{ti: ti, p: p})
		}
	}
	hits, err := d.Store.GetCachedResults(ctx, keys)
	if err != nil {
		return Plan{}, fmt.Errorf("enrich plan: %w", err)
	}
	for _, pr := range pending {
		t, p := plan.Targets[pr.ti], pr.p
		if hit, ok := hits[store.CacheKey{Provider: p.ProviderName, Type: t.Type, Value: t.Value}]; ok {
			if r, err := AnswerFromMap(hit.Result); err == nil {
				r.Provider, r.CacheHit, r.RawResponse, r.DurationMS = p.ProviderName, true, nil, 0
				plan.Done = append(plan.Done, Outcome{Target: pr.ti, Result: r})
				continue
			}
		}
		if refused[p.ProviderName] {
			plan.Done = append(plan.Done, Outcome{Target: pr.ti, Result: enrichFailedResult(p.ProviderName, CircuitOpenMessage)})
			continue
		}
		cfg, errs := enrichParseConfig(p)
		if errs != nil {
			plan.Done = append(plan.Done, Outcome{Target: pr.ti, Result: enrichFailedResult(p.ProviderName, "invalid http_config: "+errs.Error())})
			continue
		}
		call := PlannedCall{Target: pr.ti, Provider: p.ProviderName}
		for _, st := range cfg.Steps {
			call.Steps = append(call.Steps, PlannedStep{Name: st.Name, Optional: st.Optional, TimeoutSeconds: st.TimeoutSeconds})
		}
		plan.Calls = append(plan.Calls, call)
	}
	return plan, nil
}

func enrichFailedResult(provider, msg string) Answer {
	return Answer{Provider: provider, Status: store.EnrichFailed, Malice: string(indicators.MalicePending),
		Extracted: map[string]any{}, ErrorMessage: msg}
}

func enrichParseConfig(p store.EnrichmentProvider) (httpsteps.Config, error) {
	raw, err := json.Marshal(p.HTTPConfig)
	if err != nil {
		return httpsteps.Config{}, fmt.Errorf("encode http_config: %w", err)
	}
	cfg, errs := httpsteps.ParseConfig(raw)
	if errs != nil {
		return httpsteps.Config{}, errs
	}
	return cfg, nil
}

// ProviderCredentials returns the values of the auth namespace of p: env_var_mapping resolved
// against env, overlaid with the opened auth_config.
func ProviderCredentials(p store.EnrichmentProvider, box *secretbox.Box, env store.Env) (map[string]string, error) {
	out := map[string]string{}
	for field, name := range p.EnvVarMapping {
		if env == nil {
			break
		}
		if v := env(name); v != "" {
			out[field] = v
		}
	}
	if len(p.AuthConfigSealed) > 0 {
		if box == nil {
			return nil, errors.New("auth_config is sealed but no encryption key is configured")
		}
		var sealed map[string]string
		if err := box.OpenJSON(p.AuthConfigSealed, &sealed); err != nil {
			return nil, fmt.Errorf("open auth_config of %s: %w", p.ProviderName, err)
		}
		for k, v := range sealed {
			out[k] = v
		}
	}
	return out, nil
}

// enrichState is what later steps (and Record) see of earlier ones; sealed in workflow history.
type enrichState struct {
	Steps map[string]map[string]any `json:"steps"` // name → StepOutcome.Vars()
	Final string                    `json:"final"` // last step that succeeded
}

func (d *EngineDeps) openState(sealed []byte) (enrichState, error) {
	st := enrichState{Steps: map[string]map[string]any{}}
	if len(sealed) == 0 {
		return st, nil
	}
	plain, err := d.Box.Open(sealed)
	if err != nil {
		return st, fmt.Errorf("open step state: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(plain)))
	dec.UseNumber()
	if err := dec.Decode(&st); err != nil {
		return st, fmt.Errorf("decode step state: %w", err)
	}
	if st.Steps == nil {
		st.Steps = map[string]map[string]any{}
	}
	return st, nil
}

func enrichIndicatorVars(t Target) map[string]any {
	return map[string]any{
		"value":     t.Value,
		"type":      t.Type,
		"base64url": base64.RawURLEncoding.EncodeToString([]byte(t.Value)),
	}
}

// Step (the EnrichStep activity, enrichment queue) runs one HTTP step of a provider call. It reserves the
// provider's next rate-limit slot (unless the input carries one): a slot within InlineSlotWait is
// waited for here, a later one is returned as WaitUntil for a durable workflow timer. A 429 comes back
// as RetryAfter. A failure retrying cannot fix is a non-retryable ErrTypeStepPermanent error (an
// optional step's is a Skipped result instead); other failures are retryable ErrTypeStepRetryable
// errors. Both carry the masked step record as their details.
func (e *Engine) Step(ctx context.Context, in StepInput) (StepResult, error) {
	d := &e.d
	p, circuit, err := d.Store.GetProviderForCall(ctx, in.Provider)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return StepResult{}, permanent(ErrTypeStepPermanent, "provider "+in.Provider+" no longer exists", err, nil)
		}
		return StepResult{}, fmt.Errorf("enrich step: %w", err)
	}
	cfg, err := enrichParseConfig(p)
	if err != nil {
		return StepResult{}, permanent(ErrTypeStepPermanent, "invalid http_config: "+err.Error(), nil, nil)
	}
	if in.StepIndex < 0 || in.StepIndex >= len(cfg.Steps) {
		return StepResult{}, permanent(ErrTypeStepPermanent,
			fmt.Sprintf("step %d does not exist (provider has %d steps)", in.StepIndex, len(cfg.Steps)), nil, nil)
	}
	step := cfg.Steps[in.StepIndex]
	creds, err := ProviderCredentials(p, d.Box, d.Env)
	if err != nil {
		return StepResult{}, permanent(ErrTypeStepPermanent, err.Error(), nil, nil)
	}
	state, err := d.openState(in.State)
	if err != nil {
		return StepResult{}, permanent(ErrTypeStepPermanent, err.Error(), nil, nil)
	}
	stepVars := make(map[string]any, len(state.Steps))
	for k, v := range state.Steps {
		stepVars[k] = v
	}
	authVars := make(map[string]any, len(creds))
	for k, v := range creds {
		authVars[k] = v
	}
	vars := map[string]any{"indicator": enrichIndicatorVars(in.Target), "auth": authVars, "steps": stepVars}

	prepared, buildErr := httpsteps.BuildRequest(cfg, in.StepIndex, vars)
	if buildErr != nil {
		rec := httpsteps.FailedRecord(cfg, in.StepIndex, in.Target.Value, buildErr)
		rec.Error = httpsteps.NewMasker(enrichSecretValues(creds)).String(rec.Error)
		if step.Optional {
			rec.Skipped = true
			return StepResult{Record: rec, Skipped: true, State: in.State}, nil
		}
		return StepResult{}, permanent(ErrTypeStepPermanent, rec.Error, nil, &rec)
	}

	// Circuit breaker (not for the provider test endpoint): an open circuit refuses the call unless
	// this is its half-open probe.
	breaker := !in.KeepRecords
	if breaker {
		admitted, err := d.Store.CircuitAdmit(ctx, p.ProviderName, circuit, d.circuitPolicy())
		if err != nil {
			return StepResult{}, fmt.Errorf("enrich step: %w", err)
		}
		if !admitted {
			rec := httpsteps.FailedRecord(cfg, in.StepIndex, in.Target.Value, errors.New(CircuitOpenMessage))
			rec.Error = CircuitOpenMessage
			if step.Optional {
				rec.Skipped = true
				return StepResult{Record: rec, Skipped: true, State: in.State}, nil
			}
			return StepResult{}, permanent(ErrTypeCircuitOpen, CircuitOpenMessage, nil, &rec)
		}
	}

	// Rate limit: reserve (or use) a slot, then leave exactly on it. A slot missed by more than
	// SlotLateTolerance (a late dispatch on a loaded worker) is given up and a fresh one reserved:
	// sending late could put this request in the same window as the slots after it.
	slot := in.Slot
	for attempt := 0; p.RateLimit != nil; attempt++ {
		if slot.IsZero() || time.Since(slot) > SlotLateTolerance {
			s, now, err := d.Store.ReserveProviderSlot(ctx, p.ProviderName, *p.RateLimit)
			if err != nil {
				return StepResult{}, fmt.Errorf("enrich step: %w", err)
			}
			if s.Sub(now) > InlineSlotWait {
				// Translate the database's clock into this worker's so the workflow timer is right.
				return StepResult{WaitUntil: time.Now().Add(s.Sub(now)).UTC()}, nil
			}
			slot = time.Now().Add(s.Sub(now))
		}
		if wait := time.Until(slot); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return StepResult{}, fmt.Errorf("waiting for rate-limit slot: %w", ctx.Err())
			case <-t.C:
			}
		}
		if time.Since(slot) <= SlotLateTolerance || attempt >= maxSlotAttempts {
			break
		}
	}

	runner := httpsteps.NewRunner(d.HTTP, httpsteps.WithMaxResponseBytes(MaxEnrichResponseBytes),
		httpsteps.WithHostPolicy(cfg.OwnHostsPolicy(slices.Collect(maps.Keys(creds)))))
	out, err := runner.Do(ctx, prepared)
	if breaker {
		e.recordCircuit(ctx, p.ProviderName, circuit.Tracked, err)
	}
	rec := out.Record
	if !in.KeepRecords {
		rec.ResponseBody = nil
	}
	if err != nil {
		if httpsteps.IsRateLimited(err) {
			wait, ok := httpsteps.RetryAfter(err)
			if !ok {
				wait = DefaultRateLimitWait
			}
			return StepResult{Record: rec, RetryAfter: wait}, nil
		}
		final := httpsteps.IsPermanent(err) || netguard.IsBlocked(err)
		if final && step.Optional {
			out.MarkSkipped(err)
			rec.Skipped = true
			return StepResult{Record: rec, Skipped: true, State: in.State}, nil
		}
		if final {
			return StepResult{}, permanent(ErrTypeStepPermanent, rec.Error, nil, &rec)
		}
		return StepResult{}, &Error{Type: ErrTypeStepRetryable, Message: rec.Error, Retryable: true, Record: &rec}
	}
	state.Steps[step.Name] = out.Vars()
	state.Final = step.Name
	plain, err := json.Marshal(state)
	if err != nil {
		return StepResult{}, permanent(ErrTypeStepPermanent, "encode step state: "+err.Error(), nil, nil)
	}
	sealed, err := d.Box.Seal(plain)
	if err != nil {
		return StepResult{}, fmt.Errorf("seal step state: %w", err)
	}
	return StepResult{Record: rec, State: sealed, NotFound: out.NotFound}, nil
}

// recordCircuit feeds one call's outcome to the provider's breaker: no answer, a timeout or a 5xx
// counts as a failure; any other answer (success, not found, 4xx, 429) closes the circuit. A request
// the SSRF guard or the host policy refused, or one cut short by this worker stopping, says nothing
// about the provider.
// A success of a provider without a circuit row (tracked false) has nothing to close. Bookkeeping
// errors are logged, not returned: the call's result stands.
func (e *Engine) recordCircuit(ctx context.Context, provider string, tracked bool, callErr error) {
	var hostErr *httpsteps.SecretHostError
	if ctx.Err() != nil || (callErr != nil && (netguard.IsBlocked(callErr) || errors.As(callErr, &hostErr))) {
		return
	}
	d := &e.d
	var stepErr *httpsteps.StepError
	failed := callErr != nil && errors.As(callErr, &stepErr) && stepErr.Kind == httpsteps.KindRetryable
	var err error
	if failed {
		var open bool
		if open, err = d.Store.CircuitFailure(ctx, provider, d.circuitPolicy()); err == nil && open && e.log != nil {
			e.log.Warn("provider circuit open", "provider", provider, "err", callErr)
		}
	} else if tracked {
		var wasOpen bool
		if wasOpen, err = d.Store.CircuitSuccess(ctx, provider); err == nil && wasOpen && e.log != nil {
			e.log.Info("provider circuit closed", "provider", provider)
		}
	}
	if err != nil && e.log != nil {
		e.log.Warn("provider circuit bookkeeping", "provider", provider, "err", err)
	}
}

func enrichSecretValues(creds map[string]string) []string {
	out := make([]string, 0, len(creds))
	for _, v := range creds {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// Record (the EnrichRecord local activity) turns finished calls into results: field extractions and malice
// rules over the final response, the masked raw response, the cache (successes and not-found answers,
// never errors, never in test mode), and the indicators' enrichment_results, malice, is_enriched and
// last_seen (not for ad-hoc values, not in test mode).
func (e *Engine) Record(ctx context.Context, in RecordInput) (RecordResult, error) {
	d := &e.d
	outcomes := append([]Outcome(nil), in.Plan.Done...)
	now := time.Now().UTC().Truncate(time.Microsecond)
	var cache []store.CacheEntry
	look := recordLookup{d: d, providers: map[string]providerRead{}, exts: map[[2]string][]store.FieldExtraction{}}
	for _, co := range in.Calls {
		if co.Call < 0 || co.Call >= len(in.Plan.Calls) {
			return RecordResult{}, permanent(ErrTypeBadInput, fmt.Sprintf("call %d is not in the plan", co.Call), nil, nil)
		}
		call := in.Plan.Calls[co.Call]
		target := in.Plan.Targets[call.Target]
		res, entry, err := look.resultOf(ctx, call.Provider, target, co, now)
		if err != nil {
			return RecordResult{}, err
		}
		if entry != nil && !in.Test {
			cache = append(cache, *entry)
		}
		outcomes = append(outcomes, Outcome{Target: call.Target, Result: res})
	}
	if !in.Test {
		var records []store.IndicatorEnrichment
		// The plan leaves raw responses out of history; an indicator keeps the cached one.
		var hitKeys []store.CacheKey
		for _, o := range outcomes {
			if t := in.Plan.Targets[o.Target]; o.Result.CacheHit && t.IndicatorUUID != "" {
				hitKeys = append(hitKeys, store.CacheKey{Provider: o.Result.Provider, Type: t.Type, Value: t.Value})
			}
		}
		hits, err := d.Store.GetCachedResults(ctx, hitKeys)
		if err != nil {
			return RecordResult{}, fmt.Errorf("enrich record: %w", err)
		}
		byTarget := map[int]map[string]any{}
		for _, o := range outcomes {
			t := in.Plan.Targets[o.Target]
			if t.IndicatorUUID == "" {
				continue
			}
			if byTarget[o.Target] == nil {
				byTarget[o.Target] = map[string]any{}
			}
			r := o.Result
			if hit, ok := hits[store.CacheKey{Provider: r.Provider, Type: t.Type, Value: t.Value}]; ok && r.CacheHit {
				r.RawResponse = hit.Result["raw_response"]
			}
			byTarget[o.Target][r.Provider] = r.Map()
		}
		for ti, t := range in.Plan.Targets {
			if t.IndicatorUUID == "" {
				continue
			}
			id, err := uuid.Parse(t.IndicatorUUID)
			if err != nil {
				return RecordResult{}, permanent(ErrTypeBadInput, "invalid indicator uuid", err, nil)
			}
			results := byTarget[ti]
			if results == nil {
				results = map[string]any{}
			}
			records = append(records, store.IndicatorEnrichment{IndicatorUUID: id, Results: results})
		}
		// One transaction for the whole pass: one durable commit per alert, not one per call and
		// indicator.
		if err := d.Store.RecordEnrichment(ctx, cache, records); err != nil {
			return RecordResult{}, fmt.Errorf("enrich record: %w", err)
		}
		for i := range outcomes {
			outcomes[i].Result.RawResponse = nil
		}
	}
	return RecordResult{Outcomes: outcomes}, nil
}

// recordLookup reads, once per Record pass, each provider and its active field extractions
// per indicator type: the calls of one provider share them.
type recordLookup struct {
	d         *EngineDeps
	providers map[string]providerRead
	exts      map[[2]string][]store.FieldExtraction // (provider, type) → extractions
}

type providerRead struct {
	p   store.EnrichmentProvider
	err error
}

func (l recordLookup) provider(ctx context.Context, name string) (store.EnrichmentProvider, error) {
	r, ok := l.providers[name]
	if !ok {
		r.p, r.err = l.d.Store.GetProviderByName(ctx, name)
		if r.err == nil || errors.Is(r.err, store.ErrNotFound) {
			l.providers[name] = r
		}
	}
	return r.p, r.err
}

func (l recordLookup) extractions(ctx context.Context, provider, typ string) ([]store.FieldExtraction, error) {
	k := [2]string{provider, typ}
	if exts, ok := l.exts[k]; ok {
		return exts, nil
	}
	active := true
	exts, _, err := l.d.Store.ListFieldExtractions(ctx, store.FieldExtractionFilter{ProviderName: provider, IndicatorType: typ, IsActive: &active})
	if err != nil {
		return nil, err
	}
	l.exts[k] = exts
	return exts, nil
}

// resultOf turns a finished call into its result and, for a success, the cache entry to store.
func (l recordLookup) resultOf(ctx context.Context, provider string, t Target, co CallOutcome, now time.Time) (Answer, *store.CacheEntry, error) {
	d := l.d
	res := Answer{Provider: provider, Malice: string(indicators.MalicePending), Extracted: map[string]any{}, DurationMS: co.DurationMS}
	if !co.Success {
		res.Status, res.ErrorMessage = store.EnrichFailed, co.Error
		if res.ErrorMessage == "" {
			res.ErrorMessage = "provider call failed"
		}
		return res, nil, nil
	}
	p, err := l.provider(ctx, provider)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			res.Status, res.ErrorMessage = store.EnrichFailed, "provider no longer exists"
			return res, nil, nil
		}
		return res, nil, fmt.Errorf("enrich record: %w", err)
	}
	state, err := d.openState(co.State)
	if err != nil {
		res.Status, res.ErrorMessage = store.EnrichFailed, err.Error()
		return res, nil, nil
	}
	exts, err := l.extractions(ctx, provider, t.Type)
	if err != nil {
		return res, nil, fmt.Errorf("enrich record: %w", err)
	}
	rules, errs := enrichParseMalice(p.MaliceRules)
	if errs != nil {
		res.Status, res.ErrorMessage = store.EnrichFailed, "invalid malice_rules: "+errs.Error()
		return res, nil, nil
	}
	var final any
	responses := map[string]any{}
	for name, v := range state.Steps {
		responses[name] = v["response"]
	}
	if state.Final != "" {
		final = responses[state.Final]
	}
	if co.NotFound {
		res.Extracted = httpsteps.NotFoundExtracted()
	} else {
		list := make([]httpsteps.Extraction, 0, len(exts))
		for _, e := range exts {
			list = append(list, httpsteps.Extraction{SourcePath: e.SourcePath, TargetKey: e.TargetKey, ValueType: e.ValueType})
		}
		res.Extracted = httpsteps.Extract(final, responses, list)
	}
	res.Status, res.Success, res.NotFound = store.EnrichSuccess, true, co.NotFound
	res.Malice = rules.Evaluate(res.Extracted, co.NotFound)
	res.EnrichedAt = &now
	creds, err := ProviderCredentials(p, d.Box, d.Env)
	if err == nil {
		res.RawResponse = enrichBoundedRaw(httpsteps.NewMasker(enrichSecretValues(creds)).Value(final))
	}
	cached := res
	cached.DurationMS = 0
	return res, &store.CacheEntry{Provider: provider, Type: t.Type, Value: t.Value, Result: cached.Map(), TTL: p.CacheTTL(t.Type)}, nil
}

func enrichParseMalice(m map[string]any) (MaliceRules, error) {
	if len(m) == 0 {
		r, _ := ParseMaliceRules(nil)
		return r, nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return MaliceRules{}, fmt.Errorf("encode malice_rules: %w", err)
	}
	r, errs := ParseMaliceRules(raw)
	if errs != nil {
		return MaliceRules{}, errs
	}
	return r, nil
}

// enrichBoundedRaw keeps a raw response of at most httpsteps.MaxRecordedBodyBytes of JSON; a larger one is
// kept as its first bytes of text followed by httpsteps.TruncatedMarker.
func enrichBoundedRaw(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if len(b) <= httpsteps.MaxRecordedBodyBytes {
		return v
	}
	cut := httpsteps.MaxRecordedBodyBytes
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + httpsteps.TruncatedMarker
}
