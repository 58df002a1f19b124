package httpsteps

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// Bounds of a code step (kind: code): a Starlark function main(ctx) evaluated in the worker.
const (
	MaxCodeLen         = 64 << 10        // bytes of source
	MaxCodeSteps       = 1_000_000       // Starlark execution steps of one evaluation
	MaxCodeMemoryBytes = 16 << 20        // bytes one evaluation may allocate through sized operations
	MaxCodeWallTime    = 2 * time.Second // wall-clock time of one evaluation, whatever the caller's context
	codeFilename       = "code"
	meterKey           = "vigil.meter"
	rewritePrefix      = "_vigil_"
)

// CodeError is a code step that does not compile (at save: Line and Column of the problem) or fails
// when evaluated (a runtime error with the line and column it happened at, the step bound, the
// memory bound, cancellation). A code step never retries: evaluated again on the same input it
// fails the same way.
type CodeError struct {
	Line   int
	Column int
	Msg    string
}

func (e *CodeError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("code: line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return "code: " + e.Msg
}

// codeFileOptions: while loops are allowed (the step bound ends them); recursion, top-level control
// flow and global reassignment are not; load() is refused when the code is checked.
func codeFileOptions() *syntax.FileOptions {
	return &syntax.FileOptions{While: true, Set: true}
}

// compiledCode is a checked, rewritten code step ready to evaluate.
type compiledCode struct {
	prog *starlark.Program
}

// compileCode parses src, refuses what a code step may not do (load(), names starting with
// _vigil_, no main(ctx)), rewrites every operation whose result size depends on its operands into a
// metered call, and resolves it against the code step's predeclared names.
func compileCode(src string) (*compiledCode, *CodeError) {
	if strings.TrimSpace(src) == "" {
		return nil, &CodeError{Msg: "code is empty"}
	}
	if len(src) > MaxCodeLen {
		return nil, &CodeError{Msg: fmt.Sprintf("code is longer than %d bytes", MaxCodeLen)}
	}
	opts := codeFileOptions()
	f, err := opts.Parse(codeFilename, src, 0)
	if err != nil {
		return nil, codeErrorOf(err)
	}
	var mainDef *syntax.DefStmt
	for _, st := range f.Stmts {
		switch s := st.(type) {
		case *syntax.LoadStmt:
			return nil, posError(s.Load, "load() is not available in a code step: everything it may use is built in")
		case *syntax.DefStmt:
			if s.Name.Name == "main" {
				mainDef = s
			}
		}
	}
	if mainDef == nil {
		return nil, &CodeError{Line: 1, Column: 1, Msg: "code must define main(ctx)"}
	}
	if len(mainDef.Params) != 1 {
		return nil, posError(mainDef.Def, "main must take exactly one parameter (ctx)")
	}
	var bad *CodeError
	syntax.Walk(f, func(n syntax.Node) bool {
		if id, ok := n.(*syntax.Ident); ok && strings.HasPrefix(id.Name, rewritePrefix) && bad == nil {
			bad = posError(id.NamePos, "names starting with "+rewritePrefix+" are reserved")
		}
		return bad == nil
	})
	if bad != nil {
		return nil, bad
	}
	rewriteStmts(f.Stmts)
	pre := codePredeclared()
	prog, err := starlark.FileProgram(f, func(name string) bool { _, ok := pre[name]; return ok })
	if err != nil {
		return nil, codeErrorOf(err)
	}
	return &compiledCode{prog: prog}, nil
}

func posError(p syntax.Position, msg string) *CodeError {
	return &CodeError{Line: int(p.Line), Column: int(p.Col), Msg: msg}
}

// codeErrorOf turns a syntax, resolve or evaluation error into a CodeError with its position.
func codeErrorOf(err error) *CodeError {
	var se syntax.Error
	if errors.As(err, &se) {
		return posError(se.Pos, se.Msg)
	}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		msg := ee.Msg
		if reason, ok := strings.CutPrefix(msg, "Starlark computation cancelled: "); ok {
			return &CodeError{Msg: reason} // the bound, not a line of the code, ended it
		}
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			fr := ee.CallStack[i]
			if fr.Pos.Filename() == codeFilename && fr.Pos.Line > 0 {
				return &CodeError{Line: int(fr.Pos.Line), Column: int(fr.Pos.Col), Msg: cleanMsg(msg)}
			}
		}
		return &CodeError{Msg: cleanMsg(msg)}
	}
	// resolve.ErrorList: "code:3:5: undefined: foo" and more lines.
	msg := err.Error()
	if first, _, _ := strings.Cut(msg, "\n"); first != "" {
		msg = first
	}
	var line, col int
	rest := strings.TrimPrefix(msg, codeFilename+":")
	if n, _ := fmt.Sscanf(rest, "%d:%d:", &line, &col); n == 2 {
		_, tail, _ := strings.Cut(rest, ": ")
		return &CodeError{Line: line, Column: col, Msg: tail}
	}
	return &CodeError{Msg: msg}
}

// cleanMsg hides the metering calls the rewrite introduced from error messages.
func cleanMsg(msg string) string {
	msg = strings.ReplaceAll(msg, "in "+rewritePrefix+"op: ", "")
	msg = strings.ReplaceAll(msg, "in "+rewritePrefix+"call: ", "")
	msg = strings.ReplaceAll(msg, "in "+rewritePrefix+"slice: ", "")
	msg = strings.ReplaceAll(msg, "in "+rewritePrefix+"key: ", "")
	return msg
}

// meter counts the bytes a code evaluation allocates through sized operations. The count only
// grows (it is what was allocated, not what is live), so the same code on the same input is always
// stopped at the same operation: deterministic, like the step bound.
type meter struct {
	used, limit int64
	thread      *starlark.Thread // whose step count work is charged to (meter.work)
}

var errMemory = fmt.Errorf("memory bound exceeded: a code step may allocate at most %d MB", MaxCodeMemoryBytes>>20)

func (m *meter) charge(n int64) error {
	if n >= unrenderable {
		return errUnrenderable
	}
	if n < 0 || m.used+n > m.limit {
		m.used = m.limit + 1
		return errMemory
	}
	m.used += n
	return nil
}

func meterOf(thread *starlark.Thread) *meter {
	if m, ok := thread.Local(meterKey).(*meter); ok {
		return m
	}
	return &meter{limit: MaxCodeMemoryBytes}
}

// codeInput is ctx without item, converted to Starlark once per step and frozen: every item's
// evaluation shares it (ctx is read-only: code that changes it fails), and a for_each over 100
// items does not convert the steps' responses 100 times.
type codeInput struct {
	base map[string]starlark.Value
}

func newCodeInput(act map[string]any) (*codeInput, error) {
	in := &codeInput{base: map[string]starlark.Value{}}
	for _, k := range []string{namespaceIndicator, namespaceAlert, namespaceSteps} {
		v, err := toStarlark(act[k], 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		v.Freeze()
		in.base[k] = v
	}
	return in, nil
}

// with is ctx for one evaluation: the frozen base and item (None without for_each).
func (in *codeInput) with(item any, withItem bool) (starlark.Value, error) {
	d := starlark.NewDict(4)
	for _, k := range []string{namespaceAlert, namespaceIndicator, namespaceItem, namespaceSteps} {
		var v starlark.Value = starlark.None
		if k == namespaceItem {
			if withItem {
				var err error
				if v, err = toStarlark(item, 0); err != nil {
					return nil, fmt.Errorf("item: %w", err)
				}
			}
		} else {
			v = in.base[k]
		}
		if err := d.SetKey(starlark.String(k), v); err != nil {
			return nil, err
		}
	}
	d.Freeze()
	return d, nil
}

// runCode evaluates main(ctx) with input as ctx: bounded to MaxCodeSteps steps and
// MaxCodeMemoryBytes of sized allocations, cancelled with ctx. It returns main's value as plain Go
// (nil, bool, int64, float64, string, []any, map[string]any).
func (c *compiledCode) run(ctx context.Context, input *codeInput, item any, withItem bool) (any, *CodeError) {
	v, _, err := c.runCounted(ctx, input, item, withItem)
	return v, err
}

// runCounted is run, also returning the execution steps the evaluation took.
func (c *compiledCode) runCounted(ctx context.Context, input *codeInput, item any, withItem bool) (_ any, steps uint64, _ *CodeError) {
	thread := &starlark.Thread{Name: "code step", Print: func(*starlark.Thread, string) {}}
	m := &meter{limit: MaxCodeMemoryBytes, thread: thread}
	thread.SetMaxExecutionSteps(MaxCodeSteps)
	thread.OnMaxSteps = func(th *starlark.Thread) { th.Cancel(stepBoundMsg) }
	thread.SetLocal(meterKey, m)
	// The wall-clock bound holds whatever the caller's context says (a dry run in the API, an
	// activity with a long step timeout): the thread stops at its next step once it has passed.
	wall := time.AfterFunc(MaxCodeWallTime, func() {
		thread.Cancel(fmt.Sprintf("time bound exceeded: a code step may run at most %s", MaxCodeWallTime))
	})
	defer wall.Stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			thread.Cancel("cancelled: " + ctx.Err().Error())
		case <-done:
		}
	}()
	defer func() { steps = thread.ExecutionSteps() }()
	globals, err := c.prog.Init(thread, codePredeclared())
	if err != nil {
		return nil, 0, codeErrorOf(err)
	}
	globals.Freeze()
	mainFn, ok := globals["main"].(*starlark.Function)
	if !ok {
		return nil, 0, &CodeError{Msg: "main is not a function"}
	}
	arg, err := input.with(item, withItem)
	if err != nil {
		return nil, 0, &CodeError{Msg: "ctx: " + err.Error()}
	}
	out, err := starlark.Call(thread, mainFn, starlark.Tuple{arg}, nil)
	if err != nil {
		return nil, 0, codeErrorOf(err)
	}
	v, err := fromStarlark(out, 0)
	if err != nil {
		return nil, 0, &CodeError{Msg: "main returned " + err.Error()}
	}
	if err := m.charge(estimateGo(v, m.limit-m.used)); err != nil {
		return nil, 0, &CodeError{Msg: err.Error() + " (the returned value)"}
	}
	return v, 0, nil
}

// codePredeclared are the names a code step sees besides Starlark's universe: the metering calls
// the rewrite introduced, metered replacements of the universe functions that build values sized by
// their input, and json (encode, decode, indent). There is no load, no time, no random, no I/O.
func codePredeclared() starlark.StringDict {
	d := starlark.StringDict{
		rewritePrefix + "op":    starlark.NewBuiltin(rewritePrefix+"op", meteredOp),
		rewritePrefix + "call":  starlark.NewBuiltin(rewritePrefix+"call", meteredCall),
		rewritePrefix + "key":   starlark.NewBuiltin(rewritePrefix+"key", meteredKey),
		rewritePrefix + "slice": starlark.NewBuiltin(rewritePrefix+"slice", meteredSlice),
		"getattr":               starlark.NewBuiltin("getattr", meteredGetattr),
		"int":                   intBuiltin(starlark.Universe["int"].(*starlark.Builtin)),
	}
	for _, name := range []string{"list", "tuple", "zip", "enumerate", "reversed"} {
		d[name] = sizedBuiltin(starlark.Universe[name].(*starlark.Builtin), lenCharge, argsWork)
	}
	for _, name := range []string{"dict", "set"} {
		d[name] = sizedBuiltin(starlark.Universe[name].(*starlark.Builtin), lenCharge, tableWork)
	}
	d["sorted"] = sizedBuiltin(starlark.Universe["sorted"].(*starlark.Builtin), lenCharge, sortWork)
	for _, name := range []string{"min", "max", "any", "all", "float", "hash"} {
		d[name] = sizedBuiltin(starlark.Universe[name].(*starlark.Builtin), nil, argsWork)
	}
	for _, name := range []string{"str", "repr", "bytes", "print", "fail"} {
		d[name] = sizedBuiltin(starlark.Universe[name].(*starlark.Builtin), valueCharge, valueCharge)
	}
	d["json"] = &starlarkstruct.Module{Name: "json", Members: jsonMembers()}
	return d
}

// slot is what one element of a list, tuple or dict costs besides the element itself.
const slot = 16

// lenCharge: a builtin building a container from an iterable pays a slot per element up front.
func lenCharge(args starlark.Tuple, _ int64) int64 {
	var n int64
	for _, a := range args {
		if l := starlark.Len(a); l > 0 {
			n += int64(l) * slot
		}
	}
	return n
}

// valueCharge: a builtin rendering a value (str, repr, json.encode) pays its estimated size up front.
func valueCharge(args starlark.Tuple, limit int64) int64 {
	var n int64
	for _, a := range args {
		n += estimate(a, limit-n, 0)
	}
	return n
}

// argsWork: a builtin walking its arguments (iterating, comparing, hashing their elements).
func argsWork(args starlark.Tuple, limit int64) int64 {
	var n int64
	for _, a := range args {
		n += workEstimate(a, limit-n, 0)
	}
	return n
}

// tableWork: building a dict or a set from an iterable inserts each element.
func tableWork(args starlark.Tuple, limit int64) int64 {
	n := argsWork(args, limit)
	for _, a := range args {
		if l := starlark.Len(a); l > 0 {
			n += int64(l) * insertWork
		}
	}
	return n
}

// sortWork: sorting compares each element about log2(n) times.
func sortWork(args starlark.Tuple, limit int64) int64 {
	n := argsWork(args, limit)
	if len(args) > 0 {
		if l := starlark.Len(args[0]); l > 1 {
			n *= int64(bits.Len(uint(l)))
		}
	}
	return n
}

// sizedBuiltin wraps b: before it runs, mem (nil: nothing) is charged to the memory bound and work
// to the step bound.
func sizedBuiltin(b *starlark.Builtin, mem, work func(starlark.Tuple, int64) int64) *starlark.Builtin {
	return starlark.NewBuiltin(b.Name(), func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		m := meterOf(thread)
		if mem != nil {
			if err := m.charge(mem(args, m.limit-m.used)); err != nil {
				return nil, err
			}
		}
		if err := m.work(work(args, m.workLimit())); err != nil {
			return nil, err
		}
		return starlark.Call(thread, b, args, kwargs)
	})
}

// estimate is the size a value takes when rendered or copied, counting a value once per reference
// (a list holding one large string 1000 times renders 1000 copies); it stops counting past limit.
func estimate(v starlark.Value, limit int64, depth int) int64 {
	if depth > maxConvertDepth {
		return unrenderable
	}
	if limit < 0 {
		return limit + 1
	}
	switch x := v.(type) {
	case starlark.String:
		return int64(len(x)) + slot
	case starlark.Bytes:
		return int64(len(x)) + slot
	case starlark.Int:
		if _, ok := x.Int64(); ok {
			return slot
		}
		if x.BigInt().BitLen() > MaxIntDigits*10/3 { // its decimal text: quadratic to render
			return unrenderable
		}
		return int64(x.BigInt().BitLen()/8) + slot
	case starlark.Indexable: // list, tuple
		n := int64(slot)
		for i := 0; i < x.Len() && n <= limit; i++ {
			n += slot + estimate(x.Index(i), limit-n, depth+1)
		}
		return n
	case *starlark.Dict:
		n := int64(slot)
		for _, kv := range x.Items() {
			if n > limit {
				break
			}
			n += 2*slot + estimate(kv[0], limit-n, depth+1)
			n += estimate(kv[1], limit-n, depth+1)
		}
		return n
	case *starlark.Set:
		return int64(x.Len()+1) * slot
	}
	return slot
}

func estimateGo(v any, limit int64) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x)) + slot
	case []any:
		n := int64(slot)
		for _, el := range x {
			if n > limit {
				break
			}
			n += slot + estimateGo(el, limit-n)
		}
		return n
	case map[string]any:
		n := int64(slot)
		for k, el := range x {
			if n > limit {
				break
			}
			n += 2*slot + int64(len(k)) + estimateGo(el, limit-n)
		}
		return n
	}
	return slot
}

func seqLen(v starlark.Value) (int64, bool) {
	switch x := v.(type) {
	case starlark.String:
		return int64(len(x)), true
	case starlark.Bytes:
		return int64(len(x)), true
	case *starlark.List:
		return int64(x.Len()) * slot, true
	case starlark.Tuple:
		return int64(x.Len()) * slot, true
	case *starlark.Dict:
		return int64(x.Len()) * 4 * slot, true
	case *starlark.Set:
		return int64(x.Len()) * 2 * slot, true
	case starlark.Int:
		if _, ok := x.Int64(); ok {
			return slot, true
		}
		return int64(x.BigInt().BitLen()/8) + slot, true
	}
	return 0, false
}

// opCost is an upper bound of the bytes op allocates for x op y, computed before it runs.
func opCost(op string, x, y starlark.Value, limit int64) int64 {
	lx, okx := seqLen(x)
	ly, oky := seqLen(y)
	if op == "+=" {
		op = "+"
	}
	switch op {
	case "+", "|":
		if okx && oky {
			return lx + ly
		}
	case "*":
		_, xInt := x.(starlark.Int)
		_, yInt := y.(starlark.Int)
		if xInt && yInt { // a product's size is the sum of its factors'
			return lx + ly
		}
		if n, ok := y.(starlark.Int); ok && okx {
			return mulCost(lx, n)
		}
		if n, ok := x.(starlark.Int); ok && oky {
			return mulCost(ly, n)
		}
		return lx + ly
	case "%":
		if s, ok := x.(starlark.String); ok {
			return int64(len(s)) + int64(strings.Count(string(s), "%")+1)*estimate(y, limit, 0)
		}
		return lx + ly
	}
	return slot
}

func mulCost(size int64, n starlark.Int) int64 {
	k, ok := n.Int64()
	if !ok || k > math.MaxInt32 {
		return math.MaxInt64 / 8
	}
	if k <= 0 {
		return slot
	}
	if size > 0 && k > (math.MaxInt64/8)/size {
		return math.MaxInt64 / 8
	}
	return size * k
}

var opTokens = map[string]syntax.Token{"+": syntax.PLUS, "*": syntax.STAR, "%": syntax.PERCENT, "|": syntax.PIPE}

// meteredOp is _vigil_op(op, x, y): x op y after charging its size. "+=" on a list extends it in
// place, as Starlark's += does.
func meteredOp(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 3 || len(kwargs) != 0 {
		return nil, errors.New("internal: bad operator call")
	}
	op, _ := starlark.AsString(args[0])
	x, y := args[1], args[2]
	m := meterOf(thread)
	cost := opCost(op, x, y, m.limit-m.used)
	if err := m.charge(cost); err != nil {
		return nil, err
	}
	if err := m.work(opWork(op, x, y, m.workLimit(), cost)); err != nil {
		return nil, err
	}
	if tok, ok := compareTokens[op]; ok {
		if tok == syntax.IN || tok == syntax.NOT_IN {
			return starlark.Binary(tok, x, y)
		}
		b, err := starlark.Compare(tok, x, y)
		if err != nil {
			return nil, err
		}
		return starlark.Bool(b), nil
	}
	if op == "+=" {
		if l, ok := x.(*starlark.List); ok {
			iter := starlark.Iterate(y)
			if iter == nil {
				return nil, fmt.Errorf("unknown binary op: list += %s", y.Type())
			}
			defer iter.Done()
			var el starlark.Value
			for iter.Next(&el) {
				if err := l.Append(el); err != nil {
					return nil, err
				}
			}
			return l, nil
		}
	}
	tok, ok := opTokens[strings.TrimSuffix(op, "=")] // "+=" on anything but a list is +
	if !ok {
		return nil, errors.New("internal: unknown operator " + op)
	}
	return starlark.Binary(tok, x, y)
}

// methodCost bounds what a method call allocates, charged before it runs: by the method's own
// size for those whose result depends on their arguments (join, replace, format, split, items, …),
// the receiver's length for the string methods building a string, a slot for the rest.
func methodCost(recv starlark.Value, name string, args starlark.Tuple, limit int64) int64 {
	switch r := recv.(type) {
	case starlark.String, starlark.Bytes:
		s, _ := starlark.AsString(r)
		switch name {
		case "join":
			if len(args) == 1 {
				n := int64(slot)
				if l := starlark.Len(args[0]); l > 0 {
					n += int64(l) * int64(len(s))
				}
				return n + estimate(args[0], limit-n, 0)
			}
		case "replace":
			if len(args) >= 2 {
				old, _ := starlark.AsString(args[0])
				repl, _ := starlark.AsString(args[1])
				occ := int64(strings.Count(s, old)) + 1
				return int64(len(s)) + occ*int64(len(repl))
			}
		case "format":
			n := int64(len(s))
			holes := int64(strings.Count(s, "{") + 1)
			for _, a := range args {
				n += holes * estimate(a, limit-n, 0)
			}
			return n
		case "split", "rsplit", "splitlines":
			// one string per piece: the pieces' bytes, and a slot and a header each
			sep := "\n"
			if name != "splitlines" {
				sep = ""
				if len(args) > 0 {
					sep, _ = starlark.AsString(args[0])
				}
			}
			pieces := int64(len(strings.Fields(s)))
			if sep != "" {
				pieces = int64(strings.Count(s, sep)) + 1
			}
			return int64(len(s)) + pieces*2*slot
		case "count", "endswith", "find", "index", "rfind", "rindex", "startswith", "isalnum", "isalpha",
			"isdigit", "islower", "isspace", "istitle", "isupper", "elems", "codepoints", "elem_ords", "codepoint_ords":
			return slot // a number, a bool or a lazy iterable: nothing sized by the string
		}
		return int64(len(s)) + slot // a new string at most as long (lower, strip, partition, …)
	case *starlark.List:
		if name == "extend" && len(args) == 1 {
			if l := starlark.Len(args[0]); l > 0 {
				return int64(l) * slot
			}
		}
		return slot
	case *starlark.Dict:
		switch name {
		case "update":
			if len(args) == 1 {
				if l := starlark.Len(args[0]); l > 0 {
					return int64(l) * 4 * slot
				}
			}
		case "items": // a list of (key, value) tuples
			return int64(r.Len()+1) * 4 * slot
		case "keys", "values":
			return int64(r.Len()+1) * slot
		}
		return slot
	}
	return slot
}

func callMethod(thread *starlark.Thread, recv starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	m := meterOf(thread)
	if err := m.charge(methodCost(recv, name, args, m.limit-m.used)); err != nil {
		return nil, err
	}
	if err := m.work(methodWork(recv, name, args, m.workLimit())); err != nil {
		return nil, err
	}
	attr, err := getAttr(recv, name)
	if err != nil {
		return nil, err
	}
	return starlark.Call(thread, attr, args, kwargs)
}

// meteredCall is _vigil_call(recv, "name", args...): recv.name(args...) after charging its size.
func meteredCall(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) < 2 {
		return nil, errors.New("internal: bad method call")
	}
	name, _ := starlark.AsString(args[1])
	return callMethod(thread, args[0], name, args[2:], kwargs)
}

// meteredGetattr is getattr with methods bound through the meter, so getattr(s, "join")(l) costs
// what s.join(l) costs.
func meteredGetattr(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var obj starlark.Value
	var name string
	var dflt starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &obj, &name, &dflt); err != nil {
		return nil, err
	}
	attr, err := getAttr(obj, name)
	if err != nil {
		if dflt != nil {
			return dflt, nil
		}
		return nil, err
	}
	if _, isMethod := attr.(*starlark.Builtin); isMethod {
		return starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, a starlark.Tuple, kw []starlark.Tuple) (starlark.Value, error) {
			return callMethod(th, obj, name, a, kw)
		}), nil
	}
	return attr, nil
}

// rewriteStmts replaces, in place, every + * % | operation (and their augmented assignments) with
// _vigil_op(op, x, y) and every method call x.f(args) with _vigil_call(x, "f", args), so that each
// operation whose result size depends on its operands is charged before it runs.
func rewriteStmts(stmts []syntax.Stmt) {
	for _, st := range stmts {
		switch s := st.(type) {
		case *syntax.AssignStmt:
			s.LHS = rewriteExpr(s.LHS)
			s.RHS = rewriteExpr(s.RHS)
			switch s.Op {
			case syntax.PLUS_EQ, syntax.STAR_EQ, syntax.PERCENT_EQ, syntax.PIPE_EQ:
				op := strings.TrimSuffix(s.Op.String(), "=")
				if s.Op == syntax.PLUS_EQ {
					op = "+="
				}
				s.RHS = opCall(s.OpPos, op, cloneExpr(s.LHS), s.RHS)
				s.Op = syntax.EQ
			}
		case *syntax.DefStmt:
			for i, p := range s.Params {
				if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
					b.Y = rewriteExpr(b.Y)
					s.Params[i] = b
				}
			}
			rewriteStmts(s.Body)
		case *syntax.ExprStmt:
			s.X = rewriteExpr(s.X)
		case *syntax.ForStmt:
			s.X = rewriteExpr(s.X)
			rewriteStmts(s.Body)
		case *syntax.WhileStmt:
			s.Cond = rewriteExpr(s.Cond)
			rewriteStmts(s.Body)
		case *syntax.IfStmt:
			s.Cond = rewriteExpr(s.Cond)
			rewriteStmts(s.True)
			rewriteStmts(s.False)
		case *syntax.ReturnStmt:
			if s.Result != nil {
				s.Result = rewriteExpr(s.Result)
			}
		}
	}
}

func ident(pos syntax.Position, name string) *syntax.Ident {
	return &syntax.Ident{NamePos: pos, Name: name}
}

func strLit(pos syntax.Position, s string) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: fmt.Sprintf("%q", s), Value: s}
}

// keyCall wraps an index or a dict key: _vigil_key(k) charges hashing it (meteredKey).
func keyCall(k syntax.Expr) syntax.Expr {
	pos, _ := k.Span()
	return &syntax.CallExpr{Fn: ident(pos, rewritePrefix+"key"), Lparen: pos, Rparen: pos, Args: []syntax.Expr{k}}
}

func opCall(pos syntax.Position, op string, x, y syntax.Expr) syntax.Expr {
	return &syntax.CallExpr{Fn: ident(pos, rewritePrefix+"op"), Lparen: pos, Rparen: pos,
		Args: []syntax.Expr{strLit(pos, op), x, y}}
}

// cloneExpr copies an assignment target so it can also be read (x += y becomes x = op(x, y)).
func cloneExpr(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.Ident:
		return ident(x.NamePos, x.Name)
	case *syntax.IndexExpr:
		return &syntax.IndexExpr{X: cloneExpr(x.X), Lbrack: x.Lbrack, Y: cloneExpr(x.Y), Rbrack: x.Rbrack}
	case *syntax.DotExpr:
		return &syntax.DotExpr{X: cloneExpr(x.X), Dot: x.Dot, NamePos: x.NamePos, Name: ident(x.Name.NamePos, x.Name.Name)}
	case *syntax.ParenExpr:
		return &syntax.ParenExpr{Lparen: x.Lparen, X: cloneExpr(x.X), Rparen: x.Rparen}
	}
	return e
}

func rewriteExprs(list []syntax.Expr) {
	for i, e := range list {
		list[i] = rewriteExpr(e)
	}
}

func rewriteExpr(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case nil:
		return nil
	case *syntax.BinaryExpr:
		x.X, x.Y = rewriteExpr(x.X), rewriteExpr(x.Y)
		switch x.Op {
		case syntax.PLUS, syntax.STAR, syntax.PERCENT, syntax.PIPE,
			syntax.EQL, syntax.NEQ, syntax.LT, syntax.LE, syntax.GT, syntax.GE, syntax.IN, syntax.NOT_IN:
			return opCall(x.OpPos, x.Op.String(), x.X, x.Y)
		}
		return x
	case *syntax.CallExpr:
		for i, a := range x.Args {
			switch arg := a.(type) {
			case *syntax.BinaryExpr:
				if arg.Op == syntax.EQ { // keyword argument: only its value
					arg.Y = rewriteExpr(arg.Y)
					continue
				}
			case *syntax.UnaryExpr:
				if arg.Op == syntax.STAR || arg.Op == syntax.STARSTAR {
					arg.X = rewriteExpr(arg.X)
					continue
				}
			}
			x.Args[i] = rewriteExpr(a)
		}
		if dot, ok := x.Fn.(*syntax.DotExpr); ok {
			recv := rewriteExpr(dot.X)
			args := append([]syntax.Expr{recv, strLit(dot.NamePos, dot.Name.Name)}, x.Args...)
			return &syntax.CallExpr{Fn: ident(dot.NamePos, rewritePrefix+"call"), Lparen: x.Lparen, Args: args, Rparen: x.Rparen}
		}
		x.Fn = rewriteExpr(x.Fn)
		return x
	case *syntax.Comprehension:
		x.Body = rewriteExpr(x.Body)
		for _, c := range x.Clauses {
			switch cl := c.(type) {
			case *syntax.ForClause:
				cl.X = rewriteExpr(cl.X)
			case *syntax.IfClause:
				cl.Cond = rewriteExpr(cl.Cond)
			}
		}
		return x
	case *syntax.CondExpr:
		x.Cond, x.True, x.False = rewriteExpr(x.Cond), rewriteExpr(x.True), rewriteExpr(x.False)
		return x
	case *syntax.DictEntry:
		x.Key, x.Value = keyCall(rewriteExpr(x.Key)), rewriteExpr(x.Value)
		return x
	case *syntax.DictExpr:
		rewriteExprs(x.List)
		return x
	case *syntax.DotExpr:
		x.X = rewriteExpr(x.X)
		return x
	case *syntax.IndexExpr:
		x.X, x.Y = rewriteExpr(x.X), keyCall(rewriteExpr(x.Y))
		return x
	case *syntax.LambdaExpr:
		for _, p := range x.Params {
			if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				b.Y = rewriteExpr(b.Y)
			}
		}
		x.Body = rewriteExpr(x.Body)
		return x
	case *syntax.ListExpr:
		rewriteExprs(x.List)
		return x
	case *syntax.ParenExpr:
		x.X = rewriteExpr(x.X)
		return x
	case *syntax.SliceExpr:
		args := []syntax.Expr{rewriteExpr(x.X)}
		for _, e := range []syntax.Expr{x.Lo, x.Hi, x.Step} {
			if e == nil {
				args = append(args, ident(x.Lbrack, "None"))
			} else {
				args = append(args, rewriteExpr(e))
			}
		}
		return &syntax.CallExpr{Fn: ident(x.Lbrack, rewritePrefix+"slice"), Lparen: x.Lbrack, Args: args, Rparen: x.Rbrack}
	case *syntax.TupleExpr:
		rewriteExprs(x.List)
		return x
	case *syntax.UnaryExpr:
		x.X = rewriteExpr(x.X)
		return x
	}
	return e
}

// toStarlark converts plain Go (as toNative gives it) to Starlark values; map keys are inserted in
// sorted order so that iteration order, and so the code's result, never depends on Go's map order.
func toStarlark(v any, depth int) (starlark.Value, error) {
	if depth > maxConvertDepth { // what expressions see there too (toNative): null
		return starlark.None, nil
	}
	switch x := v.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(x), nil
	case int64:
		return starlark.MakeInt64(x), nil
	case int:
		return starlark.MakeInt(x), nil
	case float64:
		return starlark.Float(x), nil
	case string:
		return starlark.String(x), nil
	case []any:
		out := make([]starlark.Value, len(x))
		for i, el := range x {
			sv, err := toStarlark(el, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = sv
		}
		return starlark.NewList(out), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := starlark.NewDict(len(x))
		for _, k := range keys {
			sv, err := toStarlark(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(starlark.String(k), sv); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return toStarlark(toNative(v, depth), depth+1)
}

// fromStarlark converts main's value to plain Go: None, bool, int (64-bit), finite float, string,
// list or tuple, dict with string keys. Anything else is refused.
func fromStarlark(v starlark.Value, depth int) (any, error) {
	if depth > maxConvertDepth {
		return nil, errors.New("a value nested too deeply")
	}
	switch x := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(x), nil
	case starlark.Int:
		n, ok := x.Int64()
		if !ok {
			return nil, errors.New("an int out of the 64-bit range")
		}
		return n, nil
	case starlark.Float:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("a float that is not finite")
		}
		return f, nil
	case starlark.String:
		return string(x), nil
	case *starlark.List, starlark.Tuple:
		idx := x.(starlark.Indexable)
		out := make([]any, idx.Len())
		for i := range out {
			el, err := fromStarlark(idx.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = el
		}
		return out, nil
	case *starlark.Dict:
		out := make(map[string]any, x.Len())
		for _, kv := range x.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("a dict with a %s key (keys must be strings)", kv[0].Type())
			}
			el, err := fromStarlark(kv[1], depth+1)
			if err != nil {
				return nil, err
			}
			out[string(k)] = el
		}
		return out, nil
	}
	return nil, fmt.Errorf("a value of type %s, which is not JSON-able", v.Type())
}

func getAttr(v starlark.Value, name string) (starlark.Value, error) {
	ha, ok := v.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", v.Type(), name)
	}
	attr, err := ha.Attr(name)
	if err != nil {
		return nil, err
	}
	if attr == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", v.Type(), name)
	}
	return attr, nil
}
