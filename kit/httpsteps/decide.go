package httpsteps

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/vigil-soc/vigil/kit/validate"
)

// Decisions: a workflow step may carry when (a CEL condition: false records the step skipped with
// the value), for_each (a CEL list of at most MaxForEachItems items: the step runs once per item,
// with item in its templates, its when and its code) and kind code (a Starlark main(ctx) whose value
// is steps.<name>.result). Providers' http_config has none of these (ParseConfig refuses them).

// HasDecisions reports a step that is not a plain HTTP step: it has when, for_each or is code.
func (st Step) HasDecisions() bool { return st.When != "" || st.ForEach != "" || st.IsCode() }

// parseDecisions reads kind, when and for_each of a workflow step into st and compiles the
// expressions. It returns the earlier-steps map the rest of the step is checked with (item allowed
// when the step has for_each) and whether the step is a code step.
func parseDecisions(obj map[string]any, loc []any, earlier map[string]int, errs *validate.Errors, exprs *exprEnv, st *Step) (map[string]int, bool) {
	name, _ := obj["name"].(string)
	if v, present := obj["kind"]; present && v != nil {
		k, ok := v.(string)
		switch {
		case !ok:
			errs.Add(validate.Join(loc, "kind"), validate.TypeString, "kind must be a string", nil)
		case k != StepKindHTTP && k != StepKindCode:
			errs.AddCtx(validate.Join(loc, "kind"), validate.TypeEnum, "kind must be http or code", k, map[string]any{"expected": "http, code"})
		case k == StepKindCode:
			st.Kind = StepKindCode
		}
	}
	src := map[string]string{}
	for _, field := range []string{"for_each", "when"} {
		v, present := obj[field]
		if !present || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			errs.Add(validate.Join(loc, field), validate.TypeString, field+" must be a string (a CEL expression)", nil)
			continue
		}
		src[field] = s
	}
	if s, ok := src["for_each"]; ok {
		if _, err := exprs.compile("for_each", s, false, earlier); err != nil {
			addPositioned(errs, validate.Join(loc, "for_each"), name, err.Error(), err.Line, err.Column, s)
		}
		st.ForEach = s
		earlier = maps.Clone(earlier)
		earlier[itemAllowed] = -1
	}
	if s, ok := src["when"]; ok {
		_, withItem := earlier[itemAllowed]
		if _, err := exprs.compile("when", s, withItem, earlier); err != nil {
			addPositioned(errs, validate.Join(loc, "when"), name, err.Error(), err.Line, err.Column, s)
		}
		st.When = s
	}
	return earlier, st.IsCode()
}

// addPositioned reports a problem of an expression or of code: the message names the step, ctx
// carries line and column (when known).
func addPositioned(errs *validate.Errors, loc []any, stepName, msg string, line, col int, input string) {
	ctx := map[string]any{"step": stepName}
	if line > 0 {
		ctx["line"], ctx["column"] = line, col
	}
	errs.AddCtx(loc, validate.TypeValue, fmt.Sprintf("step %q: %s", stepName, msg), validate.Truncate(input), ctx)
}

// parseCodeStep reads the rest of a code step: name, code, timeout_seconds, optional; HTTP fields
// are refused.
func parseCodeStep(obj map[string]any, loc []any, errs *validate.Errors, st Step) (Step, bool) {
	st.Name = parseStepName(obj, loc, errs)
	st.Method, st.ExpectedStatus = "", nil
	for _, k := range []string{"method", "url", "headers", "query_params", "json_body", "form_body", "expected_status", "not_found_status", "follow_redirects"} {
		if v, present := obj[k]; present && v != nil {
			errs.Add(validate.Join(loc, k), validate.TypeExtraForbidden, k+" is an HTTP step field; a code step has name, code, when, for_each, timeout_seconds and optional", nil)
		}
	}
	if code, ok := requiredString(obj, "code", loc, errs); ok {
		if _, err := compileCode(code); err != nil {
			addPositioned(errs, validate.Join(loc, "code"), st.Name, err.Error(), err.Line, err.Column, code)
		}
		st.Code = code
	}
	if v, present := obj["timeout_seconds"]; present && v != nil {
		if n, ok := intValue(v, validate.Join(loc, "timeout_seconds"), errs); ok {
			if n < MinTimeoutSeconds || n > MaxTimeoutSeconds {
				errs.Add(validate.Join(loc, "timeout_seconds"), validate.TypeValue, fmt.Sprintf("must be between %d and %d", MinTimeoutSeconds, MaxTimeoutSeconds), n)
			} else {
				st.TimeoutSeconds = n
			}
		}
	}
	if v, present := obj["optional"]; present && v != nil {
		b, ok := v.(bool)
		if !ok {
			errs.Add(validate.Join(loc, "optional"), validate.TypeBool, "optional must be a boolean", nil)
		}
		st.Optional = b
	}
	return st, true
}

// ItemDone is one for_each item already run (by an earlier attempt of the same step): its record and
// its steps-namespace entry. RunStep does not run it again.
type ItemDone struct {
	Record StepRecord     `json:"record"`
	Vars   map[string]any `json:"vars"`
}

// StepRun is the outcome of RunStep: the step's record (secrets masked) and its entry in the steps
// namespace (unmasked: status, response, headers, result, skipped).
type StepRun struct {
	Record   StepRecord
	Vars     map[string]any
	Status   int
	NotFound bool // a plain HTTP step answered with a not_found_status: the run ends as success
	Skipped  bool
}

// skippedVars is a skipped step's entry in the steps namespace.
func skippedVars() map[string]any {
	return map[string]any{"status": 0, "response": nil, "headers": map[string]any{}, "result": nil, "skipped": true}
}

// RunStep runs step i of a workflow's cfg with its decisions: for_each (once per item, in order),
// when (per item when the step has for_each) and kind (HTTP through Do, code through Starlark).
// root holds indicator, alert, secrets and steps (name -> entry); mask lists values to mask besides
// root's secrets (what steps received for a secret). resume holds items an earlier attempt already
// ran; progress, when not nil, is told of each HTTP item as it completes (so a retried step does not
// send it again). An expression or code failure is a permanent *StepError; an HTTP failure is Do's.
// A failing optional step is recorded skipped with its error and returns no error.
func (r *Runner) RunStep(ctx context.Context, cfg Config, i int, root map[string]any, mask []string,
	resume map[int]ItemDone, progress func(int, ItemDone) error) (StepRun, error) {
	st := cfg.Steps[i]
	start := r.now()
	indicatorValue := ""
	if ind, ok := root[namespaceIndicator].(map[string]any); ok {
		indicatorValue, _ = ind["value"].(string)
	}
	masks := cfg.recordMask(i)
	masker := NewMasker(append(collectSecrets(root), mask...))
	rec := StepRecord{StepName: st.Name, StepIndex: i, IndicatorValue: indicatorValue, RequestHeaders: map[string]string{},
		RequestQueryParams: map[string]string{}, ResponseHeaders: map[string]string{}, When: st.When, ForEach: st.ForEach}
	if st.IsCode() {
		rec.Kind = StepKindCode
	} else {
		rec.RequestMethod, rec.RequestURL = strings.ToUpper(st.Method), st.URL
	}
	fail := func(err error) (StepRun, error) {
		var xe *ExprError
		if errors.As(err, &xe) && ((xe.Field == "when" && masks.when) || (xe.Field == "for_each" && masks.items)) {
			err = withheld(xe)
		}
		var se error = asStepError(i, st.Name, err)
		if be, ok := err.(*BuildError); ok {
			se = be
		}
		rec.Error = masker.String(se.Error())
		rec.DurationMS = r.now().Sub(start).Milliseconds()
		if st.Optional {
			rec.Skipped = true
			return StepRun{Record: rec, Vars: skippedVars(), Skipped: true}, nil
		}
		return StepRun{Record: rec}, se
	}
	if r.exprs == nil {
		env, err := newExprEnv()
		if err != nil {
			return fail(err)
		}
		r.exprs = env
	}
	act := exprActivation(root)
	r.input = nil // ctx of code steps, converted on first use for this step

	if st.ForEach == "" {
		run, err := r.runOne(ctx, cfg, i, root, act, nil, masker, mask, masks)
		run.Record.When, run.Record.DurationMS = st.When, r.now().Sub(start).Milliseconds()
		if err != nil {
			if st.Optional && run.Record.StepName != "" {
				run.Record.Skipped = true
				return StepRun{Record: run.Record, Vars: skippedVars(), Skipped: true}, nil
			}
			if run.Record.StepName == "" {
				return fail(err)
			}
			return StepRun{Record: run.Record}, err
		}
		return run, nil
	}

	prg, xerr := r.exprs.compile("for_each", st.ForEach, false, nil)
	if xerr != nil {
		return fail(xerr)
	}
	val, xerr := r.exprs.eval(ctx, "for_each", prg, act)
	if xerr != nil {
		return fail(xerr)
	}
	items, ok := val.([]any)
	if !ok {
		return fail(&ExprError{Field: "for_each", Msg: fmt.Sprintf("must give a list, gave %s", typeName(val))})
	}
	if len(items) > MaxForEachItems {
		return fail(&ExprError{Field: "for_each", Msg: fmt.Sprintf("gave %d items; at most %d are allowed", len(items), MaxForEachItems)})
	}
	recordItem := masker.Value
	if masks.items { // the items are computed from what a step received for a secret
		mask = appendStrings(append([]string(nil), mask...), items, 0)
		masker = NewMasker(append(collectSecrets(root), mask...))
		recordItem = func(any) any { return MaskedValue }
	}
	rec.Items = make([]StepRecord, 0, len(items))
	statuses, responses, headers, results := make([]any, len(items)), make([]any, len(items)), make([]any, len(items)), make([]any, len(items))
	ran := 0
	for k, item := range items {
		var run StepRun
		if d, ok := resume[k]; ok {
			run = StepRun{Record: d.Record, Vars: d.Vars, Skipped: d.Record.Skipped}
		} else {
			itemAct := maps.Clone(act)
			itemAct[namespaceItem] = item
			var err error
			run, err = r.runOne(ctx, cfg, i, root, itemAct, &item, masker, mask, masks)
			if err != nil {
				if run.Record.StepName == "" { // its when failed, or its request could not be built
					return fail(fmt.Errorf("item %d: %w", k, err))
				}
				run.Record.ItemIndex, run.Record.Item = intPtr(k), recordItem(item)
				rec.Items = append(rec.Items, run.Record)
				if st.Optional {
					rec.Skipped = true
					rec.Error = run.Record.Error
					rec.DurationMS = r.now().Sub(start).Milliseconds()
					return StepRun{Record: rec, Vars: skippedVars(), Skipped: true}, nil
				}
				rec.Error = run.Record.Error
				rec.DurationMS = r.now().Sub(start).Milliseconds()
				return StepRun{Record: rec}, err
			}
			run.Record.ItemIndex, run.Record.Item = intPtr(k), recordItem(item)
			if progress != nil && !st.IsCode() {
				if err := progress(k, ItemDone{Record: run.Record, Vars: run.Vars}); err != nil {
					return StepRun{Record: rec}, err
				}
			}
		}
		rec.Items = append(rec.Items, run.Record)
		if !run.Skipped {
			ran++
		}
		statuses[k], responses[k], headers[k], results[k] = run.Vars["status"], run.Vars["response"], run.Vars["headers"], run.Vars["result"]
	}
	rec.Skipped = ran == 0
	if rec.Skipped {
		rec.SkipReason = "no item ran (for_each gave none, or when was not true for any)"
	}
	rec.DurationMS = r.now().Sub(start).Milliseconds()
	vars := map[string]any{"status": statuses, "response": responses, "headers": headers, "result": results, "skipped": ran == 0, "items": items}
	return StepRun{Record: rec, Vars: vars, Skipped: ran == 0}, nil
}

func intPtr(n int) *int { return &n }

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a bool"
	case int64, float64:
		return "a number"
	case string:
		return "a string"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}

func asStepError(i int, name string, err error) *StepError {
	if se, ok := err.(*StepError); ok {
		return se
	}
	return &StepError{StepIndex: i, StepName: name, Kind: KindPermanent, Err: err}
}

// runOne runs one execution of step i (the step, or one item of it): when, then HTTP or code. It
// returns a record whose StepName is empty when the failure is not the step's own (then the caller
// records it).
func (r *Runner) runOne(ctx context.Context, cfg Config, i int, root, act map[string]any, item *any, masker *Masker, mask []string, masks recordMask) (StepRun, error) {
	st := cfg.Steps[i]
	if st.When != "" {
		_, withItem := act[namespaceItem]
		prg, xerr := r.exprs.compile("when", st.When, withItem, nil)
		if xerr != nil {
			return StepRun{}, xerr
		}
		v, xerr := r.exprs.eval(ctx, "when", prg, act)
		if xerr != nil {
			return StepRun{}, xerr
		}
		if !isTrue(v) {
			rec := emptyRecord(cfg, i, root)
			rec.Skipped, rec.When, rec.WhenValue = true, st.When, masker.Value(v)
			if _, isBool := v.(bool); masks.when && !isBool { // a value computed from what a step received for a secret
				rec.WhenValue = MaskedValue
			}
			rec.SkipReason = "when is not true"
			return StepRun{Record: rec, Vars: skippedVars(), Skipped: true}, nil
		}
	}
	if st.IsCode() {
		return r.runCode(ctx, cfg, i, root, act, masker, masks)
	}
	vars := root
	if item != nil {
		vars = maps.Clone(root)
		vars[namespaceItem] = *item
	}
	p, err := BuildRequest(cfg, i, vars)
	if err != nil {
		return StepRun{}, err
	}
	out, err := r.Do(ctx, p, mask...)
	if st.When != "" {
		out.Record.When, out.Record.WhenValue = st.When, true
	}
	if err != nil {
		return StepRun{Record: out.Record}, err
	}
	v := out.Vars()
	v["result"], v["skipped"] = nil, false
	return StepRun{Record: out.Record, Vars: v, Status: out.Status, NotFound: out.NotFound}, nil
}

func emptyRecord(cfg Config, i int, root map[string]any) StepRecord {
	indicatorValue := ""
	if ind, ok := root[namespaceIndicator].(map[string]any); ok {
		indicatorValue, _ = ind["value"].(string)
	}
	rec := FailedRecord(cfg, i, indicatorValue, nil)
	if cfg.Steps[i].IsCode() {
		rec.Kind, rec.RequestMethod, rec.RequestURL = StepKindCode, "", ""
	}
	return rec
}

// runCode evaluates a code step's main(ctx) with ctx = indicator, alert, steps and item: never
// secrets. Its value, masked, is recorded as result.
func (r *Runner) runCode(ctx context.Context, cfg Config, i int, root, act map[string]any, masker *Masker, masks recordMask) (StepRun, error) {
	st := cfg.Steps[i]
	start := r.now()
	rec := emptyRecord(cfg, i, root)
	if r.codes == nil {
		r.codes = map[string]*compiledCode{}
	}
	prog, ok := r.codes[st.Code]
	if !ok {
		var cerr *CodeError
		if prog, cerr = compileCode(st.Code); cerr != nil {
			rec.Error = masker.String(asStepError(i, st.Name, cerr).Error())
			return StepRun{Record: rec}, asStepError(i, st.Name, cerr)
		}
		r.codes[st.Code] = prog
	}
	timeout := time.Duration(st.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = DefaultTimeoutSeconds * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if r.input == nil {
		in, err := newCodeInput(act)
		if err != nil {
			se := asStepError(i, st.Name, &CodeError{Msg: "ctx: " + err.Error()})
			rec.Error = masker.String(se.Error())
			return StepRun{Record: rec}, se
		}
		r.input = in
	}
	item, withItem := act[namespaceItem]
	v, cerr := prog.run(cctx, r.input, item, withItem)
	rec.DurationMS = r.now().Sub(start).Milliseconds()
	if cerr != nil {
		var err error = cerr
		if masks.result {
			err = withheld(cerr)
		}
		se := asStepError(i, st.Name, err)
		rec.Error = masker.String(se.Error())
		return StepRun{Record: rec}, se
	}
	rec.Result = masker.Value(v)
	if masks.result { // computed from what a step received for a secret: reversed, split, encoded
		rec.Result = MaskedValue
	}
	return StepRun{Record: rec, Vars: map[string]any{"status": 0, "response": nil, "headers": map[string]any{}, "result": v, "skipped": false}}, nil
}
