package codemode

import (
	"fmt"
	"strconv"
	"strings"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// Starlark bounds steps, not memory: one step of `[0] * n`, `"x" * n` or
// `list(range(n))` allocates in proportion to n, and `s = s + s` doubles
// per step, so a one-line program could exhaust the host's memory (a
// fatal error no recover catches). guardProgram rewrites every `x + y`,
// `x * y` and `x % y` into a call of a checked helper that refuses a
// result larger than Limits.Size (elements of a list or tuple, bytes of a
// string or an int), `x += y` (and *=, %=) on a name into a check before
// the operation, and calls of the methods that grow a value (extend, join,
// replace, format) into a check before the call; range, str, repr, print,
// fail and json.encode are replaced by checked versions (reprSize bounds
// the text of a value whose parts are shared). The hidden helpers' names
// are reserved, so a program cannot rebind them.

// The hidden helpers the rewrite calls.
const (
	addName    = "__add__"
	mulName    = "__mul__"
	modName    = "__mod__"
	addEqName  = "__add_eq__"
	mulEqName  = "__mul_eq__"
	modEqName  = "__mod_eq__"
	methodName = "__method__"
	rangeLimit = "range"
)

var (
	binaryHelpers    = map[syntax.Token]string{syntax.PLUS: addName, syntax.STAR: mulName, syntax.PERCENT: modName}
	augmentedHelpers = map[syntax.Token]string{syntax.PLUS_EQ: addEqName, syntax.STAR_EQ: mulEqName, syntax.PERCENT_EQ: modEqName}
	// guardedMethods grow a value past its operands: checked before they run.
	guardedMethods = map[string]bool{"extend": true, "join": true, "replace": true, "format": true}
)

// guardProgram rewrites f in place (before it is resolved).
func guardProgram(f *syntax.File) {
	fix := func(p *syntax.Expr) {
		if *p == nil {
			return
		}
		b, ok := (*p).(*syntax.BinaryExpr)
		if !ok {
			return
		}
		name, ok := binaryHelpers[b.Op]
		if !ok {
			return
		}
		*p = &syntax.CallExpr{Fn: &syntax.Ident{NamePos: b.OpPos, Name: name}, Lparen: b.OpPos, Args: []syntax.Expr{b.X, b.Y}, Rparen: b.OpPos}
	}
	fixAll := func(l []syntax.Expr) {
		for i := range l {
			fix(&l[i])
		}
	}
	for _, st := range f.Stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			switch x := n.(type) {
			case *syntax.AssignStmt:
				fix(&x.LHS)
				fix(&x.RHS)
				if name, ok := augmentedHelpers[x.Op]; ok {
					id, ok := x.LHS.(*syntax.Ident)
					if !ok {
						break
					}
					x.RHS = &syntax.CallExpr{Fn: &syntax.Ident{NamePos: x.OpPos, Name: name}, Lparen: x.OpPos,
						Args: []syntax.Expr{&syntax.Ident{NamePos: id.NamePos, Name: id.Name}, x.RHS}, Rparen: x.OpPos}
				}
			case *syntax.DefStmt:
				fixAll(x.Params)
			case *syntax.ExprStmt:
				fix(&x.X)
			case *syntax.IfStmt:
				fix(&x.Cond)
			case *syntax.ForStmt:
				fix(&x.X)
			case *syntax.WhileStmt:
				fix(&x.Cond)
			case *syntax.ReturnStmt:
				fix(&x.Result)
			case *syntax.ParenExpr:
				fix(&x.X)
			case *syntax.CallExpr:
				if d, ok := x.Fn.(*syntax.DotExpr); ok && guardedMethods[d.Name.Name] {
					// X.m(args) -> __method__(X, "m", args): checked, then called.
					lit := &syntax.Literal{Token: syntax.STRING, TokenPos: d.NamePos, Raw: strconv.Quote(d.Name.Name), Value: d.Name.Name}
					x.Fn = &syntax.Ident{NamePos: d.NamePos, Name: methodName}
					x.Args = append([]syntax.Expr{d.X, lit}, x.Args...)
				}
				fix(&x.Fn)
				fixAll(x.Args)
			case *syntax.DotExpr:
				fix(&x.X)
			case *syntax.Comprehension:
				fix(&x.Body)
			case *syntax.ForClause:
				fix(&x.X)
			case *syntax.IfClause:
				fix(&x.Cond)
			case *syntax.DictEntry:
				fix(&x.Key)
				fix(&x.Value)
			case *syntax.LambdaExpr:
				fixAll(x.Params)
				fix(&x.Body)
			case *syntax.ListExpr:
				fixAll(x.List)
			case *syntax.TupleExpr:
				fixAll(x.List)
			case *syntax.CondExpr:
				fix(&x.Cond)
				fix(&x.True)
				fix(&x.False)
			case *syntax.UnaryExpr:
				fix(&x.X)
			case *syntax.BinaryExpr:
				fix(&x.X)
				fix(&x.Y)
			case *syntax.SliceExpr:
				fix(&x.X)
				fix(&x.Lo)
				fix(&x.Hi)
				fix(&x.Step)
			case *syntax.IndexExpr:
				fix(&x.X)
				fix(&x.Y)
			}
			return true
		})
	}
}

// size is what Limits.Size measures of a value: elements of a list or
// tuple, bytes of a string, bytes of an int's magnitude; 0 otherwise.
func size(v starlark.Value) int64 {
	switch x := v.(type) {
	case starlark.String:
		return int64(len(x))
	case starlark.Bytes:
		return int64(len(x))
	case *starlark.List:
		return int64(x.Len())
	case starlark.Tuple:
		return int64(len(x))
	case starlark.Int:
		if _, ok := x.Int64(); ok {
			return 8
		}
		return int64(x.BigInt().BitLen()/8 + 1)
	}
	return 0
}

// count is the repeat count of a sequence * int, or -1 when not one.
func count(v starlark.Value) int64 {
	i, ok := v.(starlark.Int)
	if !ok {
		return -1
	}
	n, ok := i.Int64()
	if !ok {
		return 1 << 62
	}
	return n
}

// checkSize refuses a result of op larger than Limits.Size.
func (r *run) checkSize(op syntax.Token, x, y starlark.Value) error {
	max := int64(r.e.lim.Size)
	var out int64
	switch op {
	case syntax.PERCENT:
		if f, ok := x.(starlark.String); ok {
			out = formatBound(string(f), '%', y, max)
		}
	case syntax.PLUS:
		out = size(x) + size(y)
	case syntax.STAR:
		_, xi := x.(starlark.Int)
		_, yi := y.(starlark.Int)
		switch {
		case xi && yi:
			out = size(x) + size(y)
		case yi:
			out = mulSize(size(x), count(y), max)
		case xi:
			out = mulSize(size(y), count(x), max)
		}
	}
	if out > max {
		return r.sizeHit()
	}
	return nil
}

func (r *run) sizeHit() error {
	return r.limit("value size", strconv.Itoa(r.e.lim.Size)+" elements or bytes")
}

// formatBound bounds the result of a format string with n placeholders
// (each marked by mark) over args: each placeholder may show the largest.
func formatBound(f string, mark byte, args starlark.Value, max int64) int64 {
	n := int64(strings.Count(f, string(mark)))
	if n == 0 {
		return int64(len(f))
	}
	largest := int64(0)
	each := func(v starlark.Value) {
		if s := reprSize(v, max+1); s > largest {
			largest = s
		}
	}
	if t, ok := args.(starlark.Tuple); ok {
		for _, v := range t {
			each(v)
		}
	} else {
		each(args)
	}
	return int64(len(f)) + mulSize(largest, n, max)
}

// reprSize bounds the length of v's str or repr, walking at most budget
// bytes' worth: a list holding the same large string many times is small
// in memory and huge as text.
func reprSize(v starlark.Value, budget int64) int64 {
	var n int64
	var walk func(v starlark.Value, depth int)
	walk = func(v starlark.Value, depth int) {
		if n > budget {
			return
		}
		if depth > maxDepth {
			n = budget + 1 // deeper than any value a program can print
			return
		}
		switch x := v.(type) {
		case starlark.String:
			n += int64(len(x)) + 2
		case starlark.Bytes:
			n += int64(len(x))*4 + 3
		case starlark.Int:
			n += size(x) * 3
		case starlark.Indexable: // list, tuple
			n += 2
			for i := 0; i < x.Len() && n <= budget; i++ {
				walk(x.Index(i), depth+1)
				n += 2
			}
		case *starlark.Dict:
			n += 2
			for _, kv := range x.Items() {
				if n > budget {
					return
				}
				walk(kv[0], depth+1)
				walk(kv[1], depth+1)
				n += 4
			}
		case *result:
			n += 64 + int64(len(x.errMsg)) + int64(len(x.code))
			walk(x.value, depth+1)
		default:
			n += 32
		}
	}
	walk(v, 0)
	return n
}

// checkMethod refuses a guarded method call whose result would pass
// Limits.Size.
func (r *run) checkMethod(recv starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) error {
	max := int64(r.e.lim.Size)
	var out int64
	switch s := recv.(type) {
	case *starlark.List:
		if name == "extend" && len(args) == 1 {
			if seq, ok := args[0].(starlark.Sequence); ok {
				out = int64(s.Len()) + int64(seq.Len())
			}
		}
	case starlark.String:
		switch name {
		case "join":
			if len(args) == 1 {
				if seq, ok := args[0].(starlark.Indexable); ok {
					out = int64(len(s)) * int64(seq.Len())
					for i := 0; i < seq.Len() && out <= max; i++ {
						out += size(seq.Index(i))
					}
				}
			}
		case "replace":
			if len(args) >= 2 {
				old, ok1 := args[0].(starlark.String)
				repl, ok2 := args[1].(starlark.String)
				if ok1 && ok2 && len(repl) > len(old) {
					k := int64(strings.Count(string(s), string(old)))
					out = int64(len(s)) + mulSize(int64(len(repl)-len(old)), k, max)
				}
			}
		case "format":
			all := append(starlark.Tuple(nil), args...)
			for _, kv := range kwargs {
				all = append(all, kv[1])
			}
			out = formatBound(string(s), '{', all, max)
		}
	}
	if out > max {
		return r.sizeHit()
	}
	return nil
}

func mulSize(n, k, max int64) int64 {
	if n == 0 || k <= 0 {
		return 0
	}
	if k > max/n+1 {
		return max + 1
	}
	return n * k
}

// guards are the hidden helpers of guardProgram and the bounded range.
func guards(d starlark.StringDict) {
	binary := func(name string, op syntax.Token, returnY bool) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			r := runOf(th)
			if len(args) != 2 || len(kwargs) != 0 {
				return nil, fmt.Errorf("%s: internal helper", name)
			}
			if err := r.checkSize(op, args[0], args[1]); err != nil {
				return nil, err
			}
			if returnY {
				return args[1], nil // the assignment's own operator then runs
			}
			return starlark.Binary(op, args[0], args[1])
		})
	}
	d[addName] = binary(addName, syntax.PLUS, false)
	d[mulName] = binary(mulName, syntax.STAR, false)
	d[modName] = binary(modName, syntax.PERCENT, false)
	d[addEqName] = binary(addEqName, syntax.PLUS, true)
	d[mulEqName] = binary(mulEqName, syntax.STAR, true)
	d[modEqName] = binary(modEqName, syntax.PERCENT, true)
	d[methodName] = starlark.NewBuiltin(methodName, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		r := runOf(th)
		if len(args) < 2 {
			return nil, fmt.Errorf("%s: internal helper", methodName)
		}
		recv, name := args[0], string(args[1].(starlark.String))
		ha, ok := recv.(starlark.HasAttrs)
		if !ok {
			return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
		}
		m, err := ha.Attr(name)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
		}
		if err := r.checkMethod(recv, name, args[2:], kwargs); err != nil {
			return nil, err
		}
		return starlark.Call(th, m, args[2:], kwargs)
	})
	// str, repr, print and fail build text from any value: bounded first.
	for _, name := range []string{"str", "repr", "fail"} {
		orig := starlark.Universe[name]
		d[name] = starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			r := runOf(th)
			if reprSize(args, int64(r.e.lim.Size)+1) > int64(r.e.lim.Size) {
				return nil, r.sizeHit()
			}
			return starlark.Call(th, orig, args, kwargs)
		})
	}
	printFn := starlark.Universe["print"]
	d["print"] = starlark.NewBuiltin("print", func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		r := runOf(th)
		if reprSize(args, int64(r.e.lim.Output)+1) > int64(r.e.lim.Output)+2*int64(len(args))+2 {
			return nil, r.limit("output", fmt.Sprintf("%d bytes of print output", r.e.lim.Output))
		}
		return starlark.Call(th, printFn, args, kwargs)
	})
	universeRange := starlark.Universe["range"].(*starlark.Builtin)
	d[rangeLimit] = starlark.NewBuiltin("range", func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		v, err := starlark.Call(th, universeRange, args, kwargs)
		if err != nil {
			return nil, err
		}
		if s, ok := v.(starlark.Sequence); ok && s.Len() > runOf(th).e.lim.Size {
			return nil, runOf(th).sizeHit()
		}
		return v, nil
	})
}

// jsonModule is Starlark's json module with encode bounded like str (and
// without indent, whose output grows with depth).
func jsonModule() *starlarkstruct.Module {
	encode := starjson.Module.Members["encode"]
	return &starlarkstruct.Module{Name: "json", Members: starlark.StringDict{
		"decode": starjson.Module.Members["decode"],
		"encode": starlark.NewBuiltin("json.encode", func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			r := runOf(th)
			if reprSize(args, int64(r.e.lim.Size)+1) > int64(r.e.lim.Size) {
				return nil, r.sizeHit()
			}
			return starlark.Call(th, encode, args, kwargs)
		}),
	}}
}
