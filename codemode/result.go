package codemode

import (
	"fmt"

	"go.starlark.net/starlark"

	"github.com/toolscope/toolscope/runtime"
)

// result is a call's outcome in a program: call(...) and parallel(...)
// return it. Its attributes: ok, value (the structured value, else the
// text; None on failure), text, error (the failure message, "" on success)
// and code (the failure code, "" when none).
type result struct {
	ok     bool
	value  starlark.Value
	res    *runtime.Result // its text is rendered when a program asks (.text)
	errMsg string
	code   string
}

var _ starlark.HasAttrs = (*result)(nil)

// newResult converts a registry result.
func newResult(res *runtime.Result) (*result, error) {
	out := &result{}
	if err := out.set(res); err != nil {
		return nil, err
	}
	return out, nil
}

// set fills a zero result from a registry result (parallel allocates its
// results at once).
func (out *result) set(res *runtime.Result) error {
	out.ok, out.res, out.value = !res.IsError(), res, starlark.None
	if !out.ok {
		out.errMsg, out.code = res.ErrorMessage(), string(res.Code())
		return nil
	}
	v, err := valueOf(res)
	if err != nil {
		return err
	}
	out.value = v
	return nil
}

// valueOf is a successful result's value in a program: its structured
// value, else its text.
func valueOf(res *runtime.Result) (starlark.Value, error) {
	if b, ok := res.Value(); ok {
		v, err := fromJSON(b)
		if err != nil {
			return nil, fmt.Errorf("a tool's value: %w", err)
		}
		return v, nil
	}
	return starlark.String(res.Text()), nil
}

func (r *result) String() string {
	if r.ok {
		return fmt.Sprintf("result(ok=True, value=%s)", r.value.String())
	}
	return fmt.Sprintf("result(ok=False, code=%q, error=%q)", r.code, r.errMsg)
}

// Type implements starlark.Value.
func (r *result) Type() string { return "result" }

// Freeze implements starlark.Value.
func (r *result) Freeze() { r.value.Freeze() }

// Truth implements starlark.Value: a result is true when the call
// succeeded.
func (r *result) Truth() starlark.Bool { return starlark.Bool(r.ok) }

// Hash implements starlark.Value.
func (r *result) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: result") }

// Attr implements starlark.HasAttrs.
func (r *result) Attr(name string) (starlark.Value, error) {
	switch name {
	case "ok":
		return starlark.Bool(r.ok), nil
	case "value":
		return r.value, nil
	case "text":
		if r.res == nil {
			return starlark.String(""), nil
		}
		return starlark.String(r.res.Text()), nil
	case "error":
		return starlark.String(r.errMsg), nil
	case "code":
		return starlark.String(r.code), nil
	}
	return nil, nil
}

// AttrNames implements starlark.HasAttrs.
func (r *result) AttrNames() []string { return []string{"code", "error", "ok", "text", "value"} }
