package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"

	"github.com/toolscope/toolscope/internal/core"
	"github.com/toolscope/toolscope/internal/jsonv"
)

// toolDef is the registry's own copy of a Definition (R18): JSON-valued
// fields are canonical bytes, the output schema is compiled once.
type toolDef struct {
	name      string
	def       Definition // Parameters and Output.Schema replaced by copies
	params    []byte     // canonical parameters; nil when paramsErr != nil
	paramsErr error
	outSchema *jsonv.Schema
	outJSON   []byte
	// validateArgs is set by the typed helper: it checks the argument
	// snapshot before the author's body (R105) and classifier (R106).
	validateArgs *jsonv.Schema
	// classifier is the typed helper author's classifier, called after the
	// registry validated the arguments itself.
	classifier func(context.Context, json.RawMessage) (bool, error)
	// trustedRender marks the typed helper's own renderer, which neither
	// keeps nor changes its inputs, so they need no defensive copies.
	trustedRender bool
	// alwaysParallel: the typed helper's WithParallel (no callback at all).
	alwaysParallel bool
}

// newToolDef checks def in R11's order and builds the registry's copy;
// maxSchema bounds the schemas' text (WithMaxSchemaBytes).
func newToolDef(def Definition, maxSchema int) (*toolDef, error) {
	// R11.1 output declared.
	if def.Output == nil || def.Output.Render == nil {
		return nil, fmt.Errorf("%w: tool %q needs an Output with a Render func", ErrInvalidDefinition, def.Name)
	}
	// R11.2 output schema in the subset. A typed tool's schema derived from
	// its Out type is compiled once per type: reused while the definition
	// still holds the same text (the registry's copy is the shared one,
	// which is never handed out without a copy).
	var schema *jsonv.Schema
	var outJSON []byte
	if d := derivedOutput(def); d != nil {
		if len(d.raw) > maxSchema {
			return nil, checkSchemaSize("output", json.RawMessage(d.raw), maxSchema)
		}
		schema, outJSON = d.schema, d.raw
	} else {
		if err := checkSchemaSize("output", def.Output.Schema, maxSchema); err != nil {
			return nil, err
		}
		var violations []string
		if schema, violations = jsonv.CompileSchema(def.Output.Schema); len(violations) > 0 {
			return nil, unsupportedSchema(violations)
		}
		outJSON = schema.JSON() // the canonical text CompileSchema wrote once
	}
	// R11.3 timeout.
	if def.Timeout != nil && *def.Timeout <= 0 {
		return nil, fmt.Errorf("%w: tool %q: timeout must be positive, got %v", ErrInvalidDefinition, def.Name, *def.Timeout)
	}
	// R11.4 reserved name, and (a deviation: no model can call it) the
	// empty name.
	if err := checkToolName(def.Name); err != nil {
		return nil, err
	}
	// Deviation (R11, recommended): a nil body is rejected here.
	if def.Execute == nil {
		return nil, fmt.Errorf("%w: tool %q needs an Execute func", ErrInvalidDefinition, def.Name)
	}
	td := &toolDef{name: def.Name, outSchema: schema, outJSON: outJSON}
	if def.typed != nil && reflect.ValueOf(def.Execute).Pointer() == def.typed.execPtr {
		td.validateArgs = def.typed.params
		if def.IsConcurrencySafe != nil && reflect.ValueOf(def.IsConcurrencySafe).Pointer() == def.typed.classPtr {
			td.classifier = def.typed.classifier
			td.alwaysParallel = def.typed.alwaysParallel
		}
		td.trustedRender = def.typed.defaultRender && def.Output != nil && def.Output.Render != nil &&
			reflect.ValueOf(def.Output.Render).Pointer() == reflect.ValueOf(defaultRender).Pointer()
	}
	// Not R11's validation either (Parameters is not checked, R33) but a
	// resource bound: text is measured before it is read, a Go value by
	// the encoding made below.
	if raw, ok := def.Parameters.(json.RawMessage); ok {
		if err := checkSchemaSize("parameters", raw, maxSchema); err != nil {
			return nil, err
		}
	}
	if d := derivedParams(def); d != nil {
		td.params = d.raw // shared, never handed out without a copy
	} else {
		td.params, td.paramsErr = jsonv.Encode(def.Parameters)
		if def.Parameters == nil {
			td.params, td.paramsErr = nil, nil
		}
		if errors.Is(td.paramsErr, jsonv.ErrTooLarge) {
			// Not R11's validation (a lossy schema still only surfaces in
			// Schemas, R33) but a resource bound: parameters whose shared
			// sub-schemas expand past the bound have no JSON text to show.
			return nil, unsupportedSchema([]string{fmt.Sprintf("parameters expand to more than %d repeated values: "+
				"a sub-schema shared by several positions is written out in full at each one", jsonv.MaxSharedExpansion)})
		}
		if len(td.params) > maxSchema {
			return nil, checkSchemaSize("parameters", json.RawMessage(td.params), maxSchema)
		}
	}
	cp := def
	out := *def.Output
	out.Schema = json.RawMessage(outJSON)
	cp.Output = &out
	if def.Timeout != nil {
		t := *def.Timeout
		cp.Timeout = &t
	}
	cp.Parameters = nil
	cp.Presenters = copyPresenters(def.Presenters)
	td.def = cp
	return td, nil
}

// copyPresenters deep-copies a Definition's Presenters (R18, R30), so
// neither the caller's value nor what Get returns can change what later
// Gets see. Maps and slices of any type (map[string]any, []any,
// json.RawMessage, map[string]string, …) are copied, recursively through
// their elements, interface values and arrays; sharing and cycles among
// them are kept (each map or slice is copied once). Everything else —
// pointers, structs, funcs, channels — is kept as it is: a struct value
// cannot be changed through the interface holding it, but what its
// pointer, map or slice fields refer to is shared.
func copyPresenters(v any) any {
	if v == nil {
		return nil
	}
	c := presenterCopier{}
	return c.copy(reflect.ValueOf(v)).Interface()
}

// presenterCopier holds the copies made so far, by identity.
type presenterCopier struct {
	done map[presenterKey]reflect.Value
}

type presenterKey struct {
	p   uintptr
	t   reflect.Type
	len int
}

// copy returns a deep copy of v (see copyPresenters), of v's type.
func (c *presenterCopier) copy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(c.copy(v.Elem()))
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		k := presenterKey{v.Pointer(), v.Type(), -1}
		if d, ok := c.done[k]; ok {
			return d
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		c.remember(k, out)
		it := v.MapRange()
		for it.Next() {
			out.SetMapIndex(it.Key(), c.copy(it.Value()))
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		k := presenterKey{v.Pointer(), v.Type(), v.Len()}
		if d, ok := c.done[k]; ok {
			return d
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		c.remember(k, out)
		if flat(v.Type().Elem()) {
			reflect.Copy(out, v)
			return out
		}
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(c.copy(v.Index(i)))
		}
		return out
	case reflect.Array:
		if flat(v.Type().Elem()) {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(c.copy(v.Index(i)))
		}
		return out
	}
	return v
}

func (c *presenterCopier) remember(k presenterKey, v reflect.Value) {
	if c.done == nil {
		c.done = make(map[presenterKey]reflect.Value)
	}
	c.done[k] = v
}

// flat reports an element type holding no map, slice or interface to copy.
func flat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface, reflect.Map, reflect.Slice:
		return false
	case reflect.Array:
		return flat(t.Elem())
	}
	return true
}

// derivedOutput returns the typed helper's derived output schema when def
// still declares exactly its text, else nil.
func derivedOutput(def Definition) *derivedSchema {
	if def.typed == nil || def.typed.output == nil {
		return nil
	}
	raw, ok := def.Output.Schema.(json.RawMessage)
	if !ok || !bytes.Equal(raw, def.typed.output.raw) {
		return nil
	}
	return def.typed.output
}

// derivedParams is derivedOutput for the parameter schema.
func derivedParams(def Definition) *derivedSchema {
	if def.typed == nil || def.typed.paramsDerived == nil {
		return nil
	}
	raw, ok := def.Parameters.(json.RawMessage)
	if !ok || !bytes.Equal(raw, def.typed.paramsDerived.raw) {
		return nil
	}
	return def.typed.paramsDerived
}

// definition returns a copy the caller may change freely (R30).
func (td *toolDef) definition() Definition {
	d := td.def
	if td.params != nil {
		d.Parameters = json.RawMessage(cloneBytes(td.params))
	}
	out := *d.Output
	out.Schema = json.RawMessage(cloneBytes(td.outJSON))
	d.Output = &out
	d.Presenters = copyPresenters(d.Presenters)
	if d.Timeout != nil {
		t := *d.Timeout
		d.Timeout = &t
	}
	return d
}

func (r *Registry) resolve(node *core.Node, name string) (*toolDef, bool) {
	chain := core.Load(r.global.node, node)
	return r.lookup(&chain, name)
}

// resolveExec is resolve for an execution's own tool, live: when the chain
// read now is the one s holds (nothing changed since), the answer s holds
// is reused — a few pointer compares instead of a lookup in a table that
// may hold thousands of tools.
func (r *Registry) resolveExec(s *execState) (*toolDef, bool) {
	chain := core.Load(r.global.node, s.node)
	if chain.Same(&s.chain) {
		return s.chainTool, s.chainTool != nil
	}
	return r.lookup(&chain, s.name)
}

func (r *Registry) get(name string, node *core.Node) (Definition, bool) {
	if r.closed.Load() {
		return Definition{}, false
	}
	chain := core.Load(r.global.node, node)
	td, ok := r.lookup(&chain, name)
	if !ok {
		return Definition{}, false
	}
	d := td.definition()
	if td == r.codeTool() {
		d.Description = r.codeDescriptionFor(&chain, node) // R107: written for this view
	}
	return d, true
}

func (r *Registry) schemas(node *core.Node) ([]ToolSchema, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	chain := core.Load(r.global.node, node)
	out, err := r.nativeSchemas(&chain)
	if err != nil {
		return nil, err
	}
	return r.viewWithCode(&chain, nodeKey(node), out), nil
}

// nativeSchemas projects the chain's view, without run_code (R31).
func (r *Registry) nativeSchemas(chain *core.Chain) ([]ToolSchema, error) {
	view := chain.View()
	out := make([]ToolSchema, 0, len(view)+1)
	for _, e := range view {
		td := e.Payload.(*toolDef)
		if td.paramsErr != nil {
			return nil, fmt.Errorf("tool %q parameters must be lossless JSON before schema projection", td.name)
		}
		var params json.RawMessage
		if td.params != nil {
			params = cloneBytes(td.params)
		}
		out = append(out, ToolSchema{Name: td.name, Description: td.def.Description, Parameters: params})
	}
	return out, nil
}

// executionModeOf classifies call in node's view (R36, R107).
func (r *Registry) executionModeOf(node *core.Node, call Call) Mode {
	chain := core.Load(r.global.node, node)
	td, ok := r.lookup(&chain, call.Name)
	if !ok || r.codeOnly(&chain, call.Name, call.Parent) {
		return Exclusive // R107: a collapsed call is exclusive
	}
	// Arguments over the registry's bound would be refused (INVALID_ARGS):
	// text is not read, and no classifier sees them.
	if absentArgs(call.Arguments) {
		return td.classify(callbackCtx, []byte("{}")) // R45: as the call itself would snapshot them
	}
	bound := r.cfg.argBound()
	if raw, ok := call.Arguments.(json.RawMessage); ok && len(raw) > bound {
		return Exclusive
	}
	b, err := encodeJSON(call.Arguments)
	if err != nil || len(b) > bound {
		return Exclusive
	}
	return td.classify(callbackCtx, b)
}

// classify runs the tool's classifier with ctx: parallel only on exactly
// (true, nil) without a panic (R36); the typed helper validates first
// (R106).
func (td *toolDef) classify(ctx context.Context, args []byte) (mode Mode) {
	f := td.def.IsConcurrencySafe
	if f == nil {
		return Exclusive
	}
	if td.validateArgs != nil {
		if len(td.validateArgs.Validate(args, "")) > 0 {
			return Exclusive
		}
		if td.alwaysParallel {
			return Parallel
		}
		if td.classifier != nil {
			f = td.classifier // validated: the author's classifier itself
		}
	}
	return callClassifier(f, ctx, args)
}

// classifyExec classifies an execution's arguments; a typed tool's
// validation is remembered so the body does not repeat it.
func (td *toolDef) classifyExec(s *execState) Mode {
	f := td.def.IsConcurrencySafe
	if f == nil || s.args == nil {
		return Exclusive
	}
	if v := td.validateArgs; v != nil {
		if s.argsChecked != v {
			if len(v.Validate(s.args, "")) > 0 {
				return Exclusive
			}
			s.argsChecked = v
		}
		if td.alwaysParallel {
			return Parallel
		}
		if td.classifier != nil {
			f = td.classifier
		}
	}
	arg := s.argCopy // a copy made with others of its turn (turnRun.snapshot), for the first classification
	if arg != nil {
		s.argCopy = nil
	} else {
		arg = cloneBytes(s.args)
	}
	return classifyCopy(f, s.ctx(), arg)
}

func callClassifier(f func(context.Context, json.RawMessage) (bool, error), ctx context.Context, args []byte) (mode Mode) {
	return classifyCopy(f, ctx, cloneBytes(args))
}

// classifyCopy runs the classifier on arg, a copy of the arguments that is
// the classifier's to keep or change.
func classifyCopy(f func(context.Context, json.RawMessage) (bool, error), ctx context.Context, arg []byte) (mode Mode) {
	defer func() {
		if recover() != nil {
			mode = Exclusive
		}
	}()
	ok, err := f(ctx, arg)
	if err == nil && ok {
		return Parallel
	}
	return Exclusive
}

// encodeJSON snapshots a lossless JSON value (R47); nil is JSON null
// (absent call arguments are {} before it is asked: absentArgs).
func encodeJSON(v any) ([]byte, error) {
	return jsonv.Encode(v)
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func cloneBlocks(bs []Block) []Block {
	if bs == nil {
		return nil
	}
	out := make([]Block, len(bs))
	for i, b := range bs {
		out[i] = b
		if b.Data != nil {
			out[i].Data = cloneBytes(b.Data)
		}
	}
	return out
}

// panicError turns a recovered panic value into an error (docs/contract.md#failures).
func panicError(p any) error {
	if err, ok := p.(error); ok {
		return err
	}
	return &panicValue{v: p, stack: debug.Stack()}
}

type panicValue struct {
	v     any
	stack []byte
}

func (p *panicValue) Error() string { return messageOf(p.v) }

// messageOf derives a failure message (docs/contract.md#failures).
func messageOf(v any) (msg string) {
	switch x := v.(type) {
	case error:
		msg, _ = errorText(x)
		return msg
	case string:
		return x
	default:
		defer func() {
			if recover() != nil {
				msg = unprintableMessage
			}
		}()
		return fmt.Sprint(v)
	}
}

// checkToolName refuses the names no tool may have: the reserved "run_code"
// (R11.4, R107) and the empty name. NewTool checks it at definition time,
// Register again.
func checkToolName(name string) error {
	switch name {
	case reservedName:
		return fmt.Errorf("%w: tool name %q is reserved", ErrInvalidDefinition, reservedName)
	case "":
		return fmt.Errorf("%w: tool name must not be empty", ErrInvalidDefinition)
	}
	return nil
}
