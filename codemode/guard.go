package codemode

import (
	"fmt"
	"strconv"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Starlark bounds steps, not memory: one step of `[0] * n`, `"x" * n` or
// `list(range(n))` allocates in proportion to n, and `s = s + s` doubles
// per step, so a one-line program could exhaust the host's memory (a
// fatal error no recover catches). guardProgram rewrites every `x + y` and
// `x * y` into a call of a checked helper that refuses a result larger
// than Limits.Size (elements of a list or tuple, bytes of a string, bits
// of an int / 8), and `x += y` / `x *= y` on a name into a check before the
// operation; range refuses a range longer than Limits.Size. Growth through
// methods (list.extend, str.join, str.replace, format) is not checked: it
// is bounded only by the step limit.

// The hidden helpers the rewrite calls.
const (
	addName    = "__add__"
	mulName    = "__mul__"
	addEqName  = "__add_eq__"
	mulEqName  = "__mul_eq__"
	rangeLimit = "range"
)

// guardProgram rewrites f in place (before it is resolved).
func guardProgram(f *syntax.File) {
	fix := func(p *syntax.Expr) {
		if *p == nil {
			return
		}
		b, ok := (*p).(*syntax.BinaryExpr)
		if !ok || (b.Op != syntax.PLUS && b.Op != syntax.STAR) {
			return
		}
		name := addName
		if b.Op == syntax.STAR {
			name = mulName
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
				if id, ok := x.LHS.(*syntax.Ident); ok && (x.Op == syntax.PLUS_EQ || x.Op == syntax.STAR_EQ) {
					name := addEqName
					if x.Op == syntax.STAR_EQ {
						name = mulEqName
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
		return r.limit("value size", strconv.Itoa(r.e.lim.Size)+" elements or bytes")
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
func (r *run) guards(d starlark.StringDict) {
	binary := func(name string, op syntax.Token, returnY bool) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
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
	d[addEqName] = binary(addEqName, syntax.PLUS, true)
	d[mulEqName] = binary(mulEqName, syntax.STAR, true)
	universeRange := starlark.Universe["range"].(*starlark.Builtin)
	d[rangeLimit] = starlark.NewBuiltin("range", func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		v, err := starlark.Call(th, universeRange, args, kwargs)
		if err != nil {
			return nil, err
		}
		if s, ok := v.(starlark.Sequence); ok && int64(s.Len()) > int64(r.e.lim.Size) {
			return nil, r.limit("value size", strconv.Itoa(r.e.lim.Size)+" elements or bytes")
		}
		return v, nil
	})
}
