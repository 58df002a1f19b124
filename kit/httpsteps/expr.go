package httpsteps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
)

// Limits of when and for_each expressions (CEL).
const (
	MaxExpressionLen = 4 << 10   // characters of one expression
	MaxForEachItems  = 100       // items a for_each expression may give
	ExpressionCost   = 1_000_000 // CEL runtime cost units one evaluation may spend
	maxConvertDepth  = 64
)

// Expression variables: what when and for_each see. Secrets are not among them.
const (
	namespaceItem  = "item"
	namespaceAlert = "alert"
)

// ExprError is a when or for_each expression that does not compile (at save) or fails when evaluated
// (a missing field, a wrong type, the cost limit): a permanent step failure, never a panic. Line and
// Column (1-based) locate a compile error in the expression; they are 0 for runtime errors.
type ExprError struct {
	Field  string // "when" or "for_each"
	Line   int
	Column int
	Msg    string
}

func (e *ExprError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d, column %d: %s", e.Field, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Msg)
}

// exprEnv compiles and evaluates when and for_each expressions. One is built per Runner (and per
// saved definition): a CEL environment is not free to build, and holding it in a value keeps the
// package free of globals.
type exprEnv struct {
	plain *cel.Env // indicator, alert, steps
	item  *cel.Env // the same and item, for steps with for_each
	progs map[string]cel.Program
}

func newExprEnv() (*exprEnv, error) {
	opts := []cel.EnvOption{
		cel.Variable(namespaceIndicator, cel.DynType),
		cel.Variable(namespaceAlert, cel.DynType),
		cel.Variable(namespaceSteps, cel.DynType),
		ext.Strings(),
		cel.ParserExpressionSizeLimit(MaxExpressionLen),
		cel.ParserRecursionLimit(64),
	}
	plain, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	item, err := plain.Extend(cel.Variable(namespaceItem, cel.DynType))
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	return &exprEnv{plain: plain, item: item, progs: map[string]cel.Program{}}, nil
}

var stepRefRE = regexp.MustCompile(`\bsteps\s*(?:\.\s*([A-Za-z0-9_]+)|\[\s*["']([A-Za-z0-9_]+)["']\s*\])`)

// compile checks src as the expression field of a step whose earlier steps are earlier (nil: not
// checked, at run time); withItem
// declares item (the step has for_each and this is its when, or a later step's). The first problem
// is returned with its line and column.
func (x *exprEnv) compile(field, src string, withItem bool, earlier map[string]int) (cel.Program, *ExprError) {
	if strings.TrimSpace(src) == "" {
		return nil, &ExprError{Field: field, Msg: "expression is empty"}
	}
	if len(src) > MaxExpressionLen {
		return nil, &ExprError{Field: field, Msg: fmt.Sprintf("expression is longer than %d characters", MaxExpressionLen)}
	}
	for _, m := range stepRefRE.FindAllStringSubmatchIndex(src, -1) {
		if earlier == nil { // at run time: checked at save
			break
		}
		name := ""
		if m[2] >= 0 {
			name = src[m[2]:m[3]]
		} else {
			name = src[m[4]:m[5]]
		}
		if _, ok := earlier[name]; !ok {
			line, col := lineCol(src, m[0])
			return nil, &ExprError{Field: field, Line: line, Column: col, Msg: fmt.Sprintf("steps.%s is not an earlier step", name)}
		}
	}
	env := x.plain
	if withItem {
		env = x.item
	}
	key := fmt.Sprintf("%t\x00%s", withItem, src)
	if p, ok := x.progs[key]; ok {
		return p, nil
	}
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		errs := iss.Errors()
		if len(errs) == 0 {
			return nil, &ExprError{Field: field, Msg: iss.Err().Error()}
		}
		e := errs[0]
		line, col := e.Location.Line(), e.Location.Column()+1
		msg := e.Message
		if !withItem && strings.Contains(msg, "'item'") {
			msg += " (item exists only in a step with for_each)"
		}
		return nil, &ExprError{Field: field, Line: line, Column: col, Msg: msg}
	}
	prg, err := env.Program(ast, cel.CostLimit(ExpressionCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, &ExprError{Field: field, Msg: err.Error()}
	}
	x.progs[key] = prg
	return prg, nil
}

func lineCol(src string, off int) (int, int) {
	line, col := 1, 1
	for _, r := range src[:off] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// eval evaluates prg over the activation (indicator, alert, steps, item: CEL-native values) and
// returns its value as plain Go (nil, bool, int64, float64, string, []any, map[string]any).
func (x *exprEnv) eval(ctx context.Context, field string, prg cel.Program, act map[string]any) (any, *ExprError) {
	out, _, err := prg.ContextEval(ctx, act)
	if err != nil {
		return nil, &ExprError{Field: field, Msg: err.Error()}
	}
	v, err := fromCEL(out, 0)
	if err != nil {
		return nil, &ExprError{Field: field, Msg: err.Error()}
	}
	return v, nil
}

// exprActivation is what expressions see: indicator, alert and steps (never secrets), converted once.
func exprActivation(root map[string]any) map[string]any {
	act := map[string]any{namespaceIndicator: map[string]any{}, namespaceAlert: map[string]any{}, namespaceSteps: map[string]any{}}
	for _, k := range []string{namespaceIndicator, namespaceAlert, namespaceSteps} {
		if v, ok := root[k]; ok && v != nil {
			act[k] = toNative(v, 0)
		}
	}
	return act
}

// toNative converts decoded JSON (json.Number, map[string]string, ...) to the plain values CEL and
// Starlark take: numbers as int64 when whole, else float64.
func toNative(v any, depth int) any {
	if depth > maxConvertDepth {
		return nil
	}
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			out[k] = toNative(el, depth+1)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, el := range x {
			out[k] = el
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = toNative(el, depth+1)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = el
		}
		return out
	}
	return v
}

// fromCEL converts a CEL value to plain Go: JSON-able values only.
func fromCEL(v ref.Val, depth int) (any, error) {
	if depth > maxConvertDepth {
		return nil, errors.New("value is nested too deeply")
	}
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return int64(x), nil
	case types.Double:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errors.New("value is not a finite number")
		}
		return float64(x), nil
	case types.String:
		return string(x), nil
	case *types.Err:
		return nil, x
	}
	if l, ok := v.(traits.Lister); ok {
		out := []any{}
		for it := l.Iterator(); it.HasNext() == types.True; {
			el, err := fromCEL(it.Next(), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, el)
		}
		return out, nil
	}
	if m, ok := v.(traits.Mapper); ok {
		out := map[string]any{}
		for it := m.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is not a string", k)
			}
			el, err := fromCEL(m.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = el
		}
		return out, nil
	}
	return nil, fmt.Errorf("value of type %s is not JSON-able", v.Type().TypeName())
}

// isTrue is how when reads its value: only the boolean true runs the step.
func isTrue(v any) bool {
	b, ok := v.(bool)
	return ok && b
}
