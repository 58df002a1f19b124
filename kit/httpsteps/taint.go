package httpsteps

import (
	"slices"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/parser"
)

// Taint: what a step receives in exchange for a credential (its response body and headers, exposed
// to later steps as steps.<name>.*) carries that credential's binding, by data flow, never by the
// text of the code that reads it (R4-1):
//   - a step that reads {{steps.<name>...}} of a step carrying a credential carries it too;
//   - a code step carries what every earlier step carries: its ctx holds them all, however the code
//     spells its way to them (ctx["st" + "eps"]);
//   - a for_each whose expression reads an earlier step carries what that step carries: its items
//     are data in the step's templates and code;
//   - a when that reads an earlier step carries what that step carries as a condition only: whether
//     the step fires is one bit of it per item (TaintCondition).
// A step carrying a credential as data may go only to the credential's hosts (HostPolicy), and, for
// named workflow secrets, what it receives and what a code step returns is masked in records
// (Runner.Do, DerivedSecretValues, MaskTainted). A step carrying one only as a condition may go
// elsewhere only in a run a person approved (WithApprovedRun).

// TaintLevel says how a step carries a credential: as data (the value, or anything computed from it,
// may be in its request or result) or as a condition only (whether it runs depends on the value).
type TaintLevel int

// Taint levels, weakest first.
const (
	TaintCondition TaintLevel = 1
	TaintData      TaintLevel = 2
)

type taintEntry struct {
	level TaintLevel
	via   string // the earlier step it comes through; "" when the step names the credential itself
}

// StepTaint returns the credential references step i of cfg carries as data ("secrets.NAME",
// "auth.key"): those its own templates name, and those of every earlier step whose outputs it reads,
// transitively. via maps each reference the step carries only through an earlier step to the name of
// the step it read it from; a reference the step names itself is not in via.
func (c Config) StepTaint(i int) (refs []string, via map[string]string) {
	if i < 0 || i >= len(c.Steps) {
		return []string{}, map[string]string{}
	}
	return c.taint(i, []string{c.Steps[i].URL})
}

// StepConditionTaint returns the credential references step i carries only as a condition (its when
// reads a step carrying them, and nothing carries them into its request), with the step each comes
// through.
func (c Config) StepConditionTaint(i int) (refs []string, via map[string]string) {
	if i < 0 || i >= len(c.Steps) {
		return []string{}, map[string]string{}
	}
	return c.taintAt(i, []string{c.Steps[i].URL}, TaintCondition)
}

// taint computes StepTaint of step i with the given URL templates (step 0's URL override by type).
func (c Config) taint(i int, urls []string) ([]string, map[string]string) {
	return c.taintAt(i, urls, TaintData)
}

// taintAt lists the references step i carries at exactly level.
func (c Config) taintAt(i int, urls []string, level TaintLevel) ([]string, map[string]string) {
	set := c.taintSet(i, urls)
	refs := []string{}
	via := map[string]string{}
	for ref, e := range set {
		if e.level != level {
			continue
		}
		refs = append(refs, ref)
		if e.via != "" {
			via[ref] = e.via
		}
	}
	slices.Sort(refs)
	return refs, via
}

// stepIndex maps each step name to its first step's index.
func (c Config) stepIndex() map[string]int {
	index := make(map[string]int, len(c.Steps))
	for j, st := range c.Steps {
		if _, dup := index[st.Name]; !dup {
			index[st.Name] = j
		}
	}
	return index
}

// MaskedValue is what a record shows instead of a value computed from what a step received in
// exchange for a named secret: a code step's result, a for_each item, a when's value. Masking the
// exact strings received is not enough there: code and expressions can reverse, split or encode them.
const MaskedValue = "****"

// recordMask says which decisions of step i the record masks whole: its code result and errors (a code
// step after a step carrying a named secret), its for_each items (the expression reads one) and its
// when value and errors (the condition reads one).
type recordMask struct{ result, items, when bool }

func (c Config) recordMask(i int) recordMask {
	st := c.Steps[i]
	m := recordMask{result: st.IsCode() && c.StepCarriesSecret(i)}
	index := c.stepIndex()
	for _, k := range exprStepRefs(st.ForEach, index, i) {
		m.items = m.items || c.StepCarriesSecret(k)
	}
	for _, k := range exprStepRefs(st.When, index, i) {
		m.when = m.when || c.StepCarriesSecret(k)
	}
	m.when = m.when || m.items // a when over such an item gives a value computed from it
	return m
}

// RecordOutput is how a record shows step i's value v (a run's result is its output step's value):
// a code step's result computed after a step carrying a named secret masked whole, the response of a
// step carrying one with every string masked, anything else with m's values masked.
func (c Config) RecordOutput(i int, v any, m *Masker) any {
	if i < 0 || i >= len(c.Steps) || !c.StepCarriesSecret(i) {
		return m.Value(v)
	}
	if c.Steps[i].IsCode() {
		if v == nil {
			return nil
		}
		return MaskedValue
	}
	return maskAll(v, 0)
}

// withheld replaces the message of a failed evaluation that read values received for a secret (a
// runtime error can quote them: a missing key, fail(...)); the bounds' messages and positions stay.
func withheld(err error) error {
	const why = "the message is withheld: it may quote values received in exchange for a secret"
	switch e := err.(type) {
	case *CodeError:
		if e.Line > 0 {
			return &CodeError{Line: e.Line, Column: e.Column, Msg: why}
		}
	case *ExprError:
		if e.Line == 0 {
			return &ExprError{Field: e.Field, Msg: "evaluation failed (" + why + ")"}
		}
	}
	return err
}

// taintSet is every credential reference step i carries, with its level and where it comes from.
func (c Config) taintSet(i int, urls []string) map[string]taintEntry {
	index := c.stepIndex()
	memo := map[int]map[string]taintEntry{}
	var refsOf func(j int, urls []string, depth int) map[string]taintEntry
	refsOf = func(j int, urls []string, depth int) map[string]taintEntry {
		set := map[string]taintEntry{}
		if depth > len(c.Steps) {
			return set
		}
		add := func(ref string, e taintEntry) {
			if old, has := set[ref]; !has || e.level > old.level {
				set[ref] = e
			}
		}
		inherit := func(k int, max TaintLevel) {
			if k < 0 || k >= j {
				return
			}
			inherited, done := memo[k]
			if !done {
				inherited = refsOf(k, c.ownURLs(k), depth+1)
				memo[k] = inherited
			}
			for ref, e := range inherited {
				add(ref, taintEntry{level: min(e.level, max), via: c.Steps[k].Name})
			}
		}
		st := c.Steps[j]
		if st.IsCode() { // ctx holds every earlier step
			for k := 0; k < j; k++ {
				inherit(k, TaintData)
			}
		}
		for _, k := range exprStepRefs(st.ForEach, index, j) {
			inherit(k, TaintData)
		}
		for _, k := range exprStepRefs(st.When, index, j) {
			inherit(k, TaintCondition)
		}
		var tpls []string
		for _, u := range urls {
			tpls = append(tpls, stepTemplates(st, u)...)
		}
		for _, s := range tpls {
			t, err := ParseTemplate(s)
			if err != nil {
				continue
			}
			for _, e := range t.Exprs() {
				switch {
				case len(e.Path) >= 2 && (e.Path[0] == namespaceSecrets || e.Path[0] == namespaceAuth):
					add(e.Path[0]+"."+e.Path[1], taintEntry{level: TaintData})
				case len(e.Path) >= 2 && e.Path[0] == namespaceSteps:
					if k, ok := index[e.Path[1]]; ok {
						inherit(k, TaintData)
					}
				}
			}
		}
		return set
	}
	return refsOf(i, urls, 0)
}

// exprStepRefs are the earlier steps (indices below j) a when or for_each expression reads, from its
// syntax tree, not its text: steps.<name> and steps["name"] name one step; any other use of steps
// (steps[x], steps.exists(...), steps itself) reads them all. An expression that does not parse reads
// them all.
func exprStepRefs(src string, index map[string]int, j int) []int {
	if strings.TrimSpace(src) == "" || j == 0 {
		return nil
	}
	all := func() []int {
		out := make([]int, j)
		for k := range out {
			out[k] = k
		}
		return out
	}
	p, err := parser.NewParser(parser.Macros(parser.AllMacros...), parser.MaxRecursionDepth(64))
	if err != nil {
		return all()
	}
	tree, iss := p.Parse(common.NewTextSource(src))
	if iss != nil && len(iss.GetErrors()) > 0 {
		return all()
	}
	seen := map[int]bool{}
	var out []int
	for _, id := range ast.MatchDescendants(ast.NavigateAST(tree), ast.KindMatcher(ast.IdentKind)) {
		if id.AsIdent() != namespaceSteps {
			continue
		}
		name, ok := "", false
		if parent, has := id.Parent(); has {
			switch parent.Kind() {
			case ast.SelectKind:
				name, ok = parent.AsSelect().FieldName(), true
			case ast.CallKind:
				call := parent.AsCall()
				if args := call.Args(); call.FunctionName() == "_[_]" && len(args) == 2 && args[0].ID() == id.ID() &&
					args[1].Kind() == ast.LiteralKind {
					if s, isStr := args[1].AsLiteral().Value().(string); isStr {
						name, ok = s, true
					}
				}
			}
		}
		if !ok {
			return all()
		}
		if k, found := index[name]; found && k < j && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// ownURLs are the URL templates step j may be sent with: its url, and for step 0 every override by
// indicator type.
func (c Config) ownURLs(j int) []string {
	urls := []string{c.Steps[j].URL}
	if j == 0 {
		for _, k := range sortedKeys(c.URLTemplatesByType) {
			urls = append(urls, c.URLTemplatesByType[k])
		}
	}
	return urls
}

// carriesSecret reports whether refs hold a named workflow secret.
func carriesSecret(refs []string) bool {
	for _, r := range refs {
		if strings.HasPrefix(r, namespaceSecrets+".") {
			return true
		}
	}
	return false
}

// StepCarriesSecret reports whether step i of cfg carries a named workflow secret, itself or through
// an earlier step's outputs: its response is then masked in records and its outputs are masked in
// every later step's record (DerivedSecretValues).
func (c Config) StepCarriesSecret(i int) bool {
	refs, _ := c.StepTaint(i)
	return carriesSecret(refs)
}

// DerivedSecretValues are the values that steps holding a named secret received (every string of
// their response body, and their header values but the plain transport ones), from steps, the
// "steps" namespace (name -> StepOutcome.Vars()): what later steps' records mask like the secret.
func (c Config) DerivedSecretValues(steps map[string]any) []string {
	var out []string
	for i, st := range c.Steps {
		v, ok := steps[st.Name].(map[string]any)
		if !ok || !c.StepCarriesSecret(i) {
			continue
		}
		out = appendStrings(out, v["response"], 0)
		out = appendStrings(out, v["result"], 0)
		out = appendStrings(out, v["items"], 0)
		hs := []any{v["headers"]}
		if list, ok := v["headers"].([]any); ok { // a for_each step: one per item
			hs = list
		}
		for _, hv := range hs {
			h, ok := hv.(map[string]any)
			if !ok {
				continue
			}
			for k, hv := range h {
				if s, ok := hv.(string); ok && s != "" && !isPlainHeader(k) {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func appendStrings(out []string, v any, depth int) []string {
	if depth > 64 {
		return out
	}
	switch x := v.(type) {
	case string:
		if x != "" {
			out = append(out, x)
		}
	case map[string]any:
		for _, el := range x {
			out = appendStrings(out, el, depth+1)
		}
	case []any:
		for _, el := range x {
			out = appendStrings(out, el, depth+1)
		}
	}
	return out
}

// plainHeaders are transport headers whose values say nothing about a credential; every other
// header of a response received for a secret is masked.
var plainHeaders = []string{"content-type", "content-length", "content-encoding", "transfer-encoding", "connection",
	"date", "cache-control", "pragma", "expires", "vary", "server", "strict-transport-security",
	"x-content-type-options", "retry-after"}

func isPlainHeader(name string) bool { return slices.Contains(plainHeaders, strings.ToLower(name)) }

// maskAll masks every string of a decoded value (numbers, booleans and keys are kept): the record of
// a response received for a secret.
func maskAll(v any, depth int) any {
	if depth > 64 {
		return Mask("")
	}
	switch x := v.(type) {
	case string:
		return Mask(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			out[k] = maskAll(el, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = maskAll(el, depth+1)
		}
		return out
	}
	return v
}

// maskAllHeaders masks every header value but the plain transport ones.
func maskAllHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if isPlainHeader(k) {
			out[k] = v
		} else {
			out[k] = Mask(v)
		}
	}
	return out
}
