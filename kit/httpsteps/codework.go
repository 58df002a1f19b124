package httpsteps

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unicode/utf8"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Work: what a builtin does in Go (compare, search, hash, copy, sort, decode) costs one Starlark
// execution step, whatever the size of its operands. So each is charged, before it runs, a step per
// workBytesPerStep bytes it may touch (strings by length, containers at a slot per element): the
// 1 000 000-step bound then bounds CPU too (R4-4), and MaxCodeWallTime ends whatever is left.
const (
	workBytesPerStep = 256
	// elemWork is what comparing or hashing one element of a container costs, in bytes of work: an
	// element costs a Go call (~15 ns, an interpreter step), a byte of a string a fraction of a nanosecond.
	elemWork = 256
	// insertWork is what inserting one element into a dict or a set costs (hashing, probing, growing
	// the table: about a microsecond), for the builtins that build one from an iterable.
	insertWork = 2048
	// MaxIntDigits: ints longer than this are not parsed from or rendered to text (as Python 3.11):
	// converting them is quadratic.
	MaxIntDigits = 4300
	// unrenderable is the cost estimate gives a value no builtin may walk: nested deeper than
	// maxConvertDepth (Go recursion over it could exhaust the stack) or an int beyond MaxIntDigits.
	unrenderable = math.MaxInt64 / 4
)

var errUnrenderable = fmt.Errorf("a value nested deeper than %d levels, or an int of more than %d digits, cannot be rendered, hashed or copied in a code step",
	maxConvertDepth, MaxIntDigits)

// stepBoundMsg is how the step bound (execution steps and charged work alike) ends an evaluation.
var stepBoundMsg = fmt.Sprintf("step bound exceeded: a code step may run at most %d execution steps", MaxCodeSteps)

// work charges n bytes of work to the thread's step count; past the bound the thread is cancelled
// and the builtin refused before it runs.
func (m *meter) work(n int64) error {
	if m.thread == nil || n < workBytesPerStep {
		return nil
	}
	if n >= unrenderable {
		return errUnrenderable
	}
	m.thread.Steps += uint64(n / workBytesPerStep)
	if m.thread.Steps >= MaxCodeSteps {
		m.thread.Cancel(stepBoundMsg)
		return errors.New(stepBoundMsg)
	}
	return nil
}

// shallowSize is the bytes a builtin touches reading v once at its top level: a string's length, a
// slot per element of a container, an int's bytes.
func shallowSize(v starlark.Value) int64 {
	if n, ok := seqLen(v); ok {
		return n
	}
	return slot
}

// workEstimate is the bytes a comparison or a hash may touch in v: every string and element it holds,
// down to depth (comparisons stop at starlark.CompareLimit levels; hashing tuples does not stop).
func workEstimate(v starlark.Value, limit int64, depth int) int64 {
	if depth > maxConvertDepth {
		return unrenderable
	}
	if limit < 0 {
		return limit + 1
	}
	switch x := v.(type) {
	case starlark.Tuple:
		n := int64(slot)
		for i := 0; i < len(x) && n <= limit; i++ {
			n += elemWork + workEstimate(x[i], limit-n, depth+1)
		}
		return n
	case *starlark.List:
		n := int64(slot)
		for i := 0; i < x.Len() && n <= limit; i++ {
			n += elemWork + workEstimate(x.Index(i), limit-n, depth+1)
		}
		return n
	case *starlark.Dict:
		n := int64(slot)
		for _, kv := range x.Items() {
			if n > limit {
				break
			}
			n += 2*elemWork + workEstimate(kv[0], limit-n, depth+1) + workEstimate(kv[1], limit-n, depth+1)
		}
		return n
	case starlark.Sequence: // a range, a set, a string's elems: walked element by element in Go
		return int64(x.Len()+1) * elemWork
	}
	return shallowSize(v)
}

// workLimit is the work left before the step bound, in bytes (what estimates need not count past).
func (m *meter) workLimit() int64 {
	if m.thread == nil || m.thread.Steps >= MaxCodeSteps {
		return 0
	}
	return int64(MaxCodeSteps-m.thread.Steps) * workBytesPerStep
}

// opWork is the work of x op y: comparisons and membership walk both operands; building a result
// (+ * % |) touches what it allocates (charged as memory too); an int product costs the product of
// its factors' words.
func opWork(op string, x, y starlark.Value, limit int64, memCost int64) int64 {
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
		n := workEstimate(x, limit, 0)
		return n + workEstimate(y, limit-n, 0)
	case "in", "not in":
		switch y.(type) {
		case *starlark.Dict, *starlark.Set: // a hash of x
			return workEstimate(x, limit, 0)
		case starlark.String, starlark.Bytes:
			return shallowSize(x) + shallowSize(y)
		}
		n := workEstimate(y, limit, 0)
		return n + workEstimate(x, limit-n, 0)
	case "*":
		if a, ok := x.(starlark.Int); ok {
			if b, ok := y.(starlark.Int); ok {
				wa, wb := int64(a.BigInt().BitLen()/64+1), int64(b.BigInt().BitLen()/64+1)
				if wa > 1 && wb > 1 {
					if hi, lo := bits.Mul64(uint64(wa), uint64(wb)); hi != 0 || lo > uint64(unrenderable) {
						return unrenderable - 1
					} else {
						return int64(lo) * 8
					}
				}
			}
		}
	}
	return memCost
}

var compareTokens = map[string]syntax.Token{"==": syntax.EQL, "!=": syntax.NEQ, "<": syntax.LT, "<=": syntax.LE,
	">": syntax.GT, ">=": syntax.GE, "in": syntax.IN, "not in": syntax.NOT_IN}

// methodWork is what a method call may touch: its receiver once (a string scanned, a list searched)
// and its arguments (hashed, compared, copied).
func methodWork(recv starlark.Value, name string, args starlark.Tuple, limit int64) int64 {
	n := int64(0)
	switch r := recv.(type) {
	case starlark.String, starlark.Bytes:
		switch name {
		case "startswith", "endswith": // as long as the prefix or suffix asked
		default:
			n = shallowSize(r)
		}
	case *starlark.Dict:
		if name == "update" && len(args) == 1 {
			if l := starlark.Len(args[0]); l > 0 {
				n = int64(l) * insertWork
			}
		}
	case *starlark.List:
		switch name {
		case "index", "remove", "count":
			n = workEstimate(r, limit, 0)
		case "insert", "pop", "clear":
			n = shallowSize(r)
		}
	}
	for _, a := range args {
		n += workEstimate(a, limit-n, 0)
	}
	return n
}

// meteredKey is _vigil_key(k): k unchanged, after charging the work of hashing it (the rewrite wraps
// every index and dict-display key, so a 15 MB string used as a key costs its size each time).
func meteredKey(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 1 || len(kwargs) != 0 {
		return nil, errors.New("internal: bad key call")
	}
	m := meterOf(thread)
	switch args[0].(type) {
	case starlark.Int, starlark.Bool, starlark.NoneType, starlark.Float:
		return args[0], nil
	}
	if err := m.work(workEstimate(args[0], m.workLimit(), 0)); err != nil {
		return nil, err
	}
	return args[0], nil
}

// meteredSlice is _vigil_slice(x, lo, hi, step): x[lo:hi:step] after charging what it copies (a
// string slice with step 1 shares its bytes; any other slice copies its elements).
func meteredSlice(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 4 || len(kwargs) != 0 {
		return nil, errors.New("internal: bad slice call")
	}
	x, lo, hi, stepV := args[0], args[1], args[2], args[3]
	sl, ok := x.(starlark.Sliceable)
	if !ok {
		return nil, fmt.Errorf("invalid slice operand %s", x.Type())
	}
	n := sl.Len()
	step := 1
	if stepV != starlark.None {
		var err error
		if step, err = starlark.AsInt32(stepV); err != nil {
			return nil, fmt.Errorf("invalid slice step: %s", err)
		}
		if step == 0 {
			return nil, errors.New("zero is not a valid slice step")
		}
	}
	var start, end int
	if step > 0 {
		var err error
		if start, err = sliceIndex(lo, n, 0, 0, n); err != nil {
			return nil, fmt.Errorf("invalid start index: %s", err)
		}
		if end, err = sliceIndex(hi, n, n, 0, n); err != nil {
			return nil, fmt.Errorf("invalid end index: %s", err)
		}
		if end < start {
			end = start
		}
	} else {
		var err error
		if start, err = sliceIndex(lo, n, n-1, math.MinInt, n-1); err != nil {
			return nil, fmt.Errorf("invalid start index: %s", err)
		}
		if end, err = sliceIndex(hi, n, -1, -1, math.MaxInt); err != nil {
			return nil, fmt.Errorf("invalid end index: %s", err)
		}
		if start < end {
			start = end
		}
	}
	count := int64(0)
	if step > 0 {
		count = int64((end - start + step - 1) / step)
	} else {
		count = int64((start - end - step - 1) / -step)
	}
	var cost int64
	switch x.(type) {
	case starlark.String, starlark.Bytes:
		if step != 1 {
			cost = count + slot
		} else {
			cost = slot // a substring shares the string's bytes
		}
	default:
		cost = (count + 1) * slot
	}
	m := meterOf(thread)
	if err := m.charge(cost); err != nil {
		return nil, err
	}
	if err := m.work(cost); err != nil {
		return nil, err
	}
	return sl.Slice(start, end, step), nil
}

// sliceIndex reads a slice bound v (None: dflt), negative values counted from the end, clamped to
// [lo, hi]; math.MinInt/MaxInt leave a side unclamped.
func sliceIndex(v starlark.Value, n, dflt, lo, hi int) (int, error) {
	i := dflt
	if v != nil && v != starlark.None {
		var err error
		if i, err = starlark.AsInt32(v); err != nil {
			return 0, err
		}
		if i < 0 {
			i += n
		}
	}
	if i < lo {
		i = lo
	}
	if i > hi {
		i = hi
	}
	return i, nil
}

// jsonDecode is json.decode with its input scanned first: nesting deeper than maxConvertDepth is
// refused before the decoder (which recurses once per level in Go, and took the goroutine's stack past
// Go's fatal 1 GB limit at 3 000 000 levels: R4-2) sees it, and the values it will build are charged
// (a container or an element costs more than the bytes that spell it: "[]," builds a list).
func jsonDecode(decode *starlark.Builtin) *starlark.Builtin {
	return starlark.NewBuiltin("decode", func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) >= 1 {
			if s, ok := starlark.AsString(args[0]); ok {
				containers, elements, err := scanJSON(s)
				if err != nil {
					return nil, fmt.Errorf("json.decode: %w", err)
				}
				m := meterOf(thread)
				if err := m.charge(int64(len(s)) + containers*4*slot + elements*2*slot); err != nil {
					return nil, err
				}
				if err := m.work(int64(len(s))); err != nil {
					return nil, err
				}
			}
		}
		return starlark.Call(thread, decode, args, kwargs)
	})
}

// scanJSON counts the containers and elements of JSON text and refuses nesting deeper than
// maxConvertDepth, without recursion. It does not validate: the decoder does.
func scanJSON(s string) (containers, elements int64, err error) {
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			elements++
		case '[', '{':
			depth++
			containers++
			if depth > maxConvertDepth {
				return 0, 0, fmt.Errorf("nesting deeper than %d levels at offset %d", maxConvertDepth, i)
			}
		case ']', '}':
			depth--
		case ',', ':':
			elements++
		}
	}
	return containers, elements, nil
}

// intBuiltin is int() refusing to parse more than MaxIntDigits characters (quadratic in Go).
func intBuiltin(b *starlark.Builtin) *starlark.Builtin {
	return starlark.NewBuiltin(b.Name(), func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) >= 1 {
			if s, ok := starlark.AsString(args[0]); ok && len(s) > MaxIntDigits {
				return nil, fmt.Errorf("int: a string of more than %d characters", MaxIntDigits)
			}
		}
		return starlark.Call(thread, b, args, kwargs)
	})
}

// jsonMembers are the json module's functions, metered: encode and indent charged by the size of
// what they render (escapes and indentation included), decode scanned first (jsonDecode).
func jsonMembers() starlark.StringDict {
	members := starlark.StringDict{}
	for _, name := range []string{"encode", "encode_indent", "indent"} {
		b := starjson.Module.Members[name].(*starlark.Builtin)
		members[name] = starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			m := meterOf(thread)
			cost, err := jsonCost(name, args, kwargs, m.limit-m.used)
			if err != nil {
				return nil, fmt.Errorf("json.%s: %w", name, err)
			}
			if err := m.charge(cost); err != nil {
				return nil, err
			}
			if err := m.work(cost); err != nil {
				return nil, err
			}
			return starlark.Call(thread, b, args, kwargs)
		})
	}
	members["decode"] = jsonDecode(starjson.Module.Members["decode"].(*starlark.Builtin))
	return members
}

// jsonCost bounds what json.encode, encode_indent or indent writes: a string's escapes (a control
// character or an invalid byte becomes six), and with indentation a line per element, each indented
// up to maxConvertDepth times.
func jsonCost(name string, args starlark.Tuple, kwargs []starlark.Tuple, limit int64) (int64, error) {
	if len(args) == 0 {
		return slot, nil
	}
	perLine := int64(0)
	if name != "encode" {
		prefix, indent := 0, 1
		for _, kv := range kwargs {
			k, _ := starlark.AsString(kv[0])
			v, _ := starlark.AsString(kv[1])
			switch k {
			case "prefix":
				prefix = len(v)
			case "indent":
				indent = len(v)
			}
		}
		perLine = int64(prefix) + int64(indent)*maxConvertDepth + 2
	}
	if name == "indent" {
		s, ok := starlark.AsString(args[0])
		if !ok {
			return slot, nil
		}
		containers, elements, err := scanJSON(s)
		if err != nil {
			return 0, err
		}
		return int64(len(s)) + (containers+elements+1)*perLine, nil
	}
	n := jsonEstimate(args[0], limit, 0)
	if perLine > 0 && n < unrenderable {
		n += (estimate(args[0], limit, 0)/slot + 1) * perLine
	}
	return n, nil
}

// jsonEstimate is estimate with strings counted as JSON writes them.
func jsonEstimate(v starlark.Value, limit int64, depth int) int64 {
	if depth > maxConvertDepth {
		return unrenderable
	}
	if limit < 0 {
		return limit + 1
	}
	switch x := v.(type) {
	case starlark.String:
		return quotedLen(string(x)) + slot
	case starlark.Indexable:
		n := int64(slot)
		for i := 0; i < x.Len() && n <= limit; i++ {
			n += slot + jsonEstimate(x.Index(i), limit-n, depth+1)
		}
		return n
	case *starlark.Dict:
		n := int64(slot)
		for _, kv := range x.Items() {
			if n > limit {
				break
			}
			n += 2*slot + jsonEstimate(kv[0], limit-n, depth+1) + jsonEstimate(kv[1], limit-n, depth+1)
		}
		return n
	}
	return estimate(v, limit, depth)
}

// quotedLen bounds the length of s quoted as a JSON string.
func quotedLen(s string) int64 {
	if !utf8.ValidString(s) {
		return 6*int64(len(s)) + 2
	}
	n := int64(len(s)) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20:
			n += 5
		case c == '"' || c == '\\' || c == '<' || c == '>' || c == '&':
			n += 5
		}
	}
	return n
}
