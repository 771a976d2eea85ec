package runtime

import (
	"fmt"

	"github.com/toolscope/toolscope/internal/core"
)

// Presentation is how a scope presents its tools to the model (R107):
// natively, one tool per function the model calls; as code, through the
// single tool run_code, whose program calls the others; or both.
type Presentation uint8

// The presentation modes. A scope that declares PresentationUnset inherits
// the mode of the nearest scope on its chain that declares one (the global
// scope last), else the registry's default (WithDefaultPresentation,
// PresentationNative unless set).
const (
	PresentationUnset  Presentation = iota // declares nothing
	PresentationNative                     // the view's tools, no run_code
	PresentationCode                       // run_code appended; the others only from inside a program
	PresentationBoth                       // run_code appended; the others callable directly too
)

// String returns "unset", "native", "code" or "both".
func (p Presentation) String() string {
	switch p {
	case PresentationUnset:
		return "unset"
	case PresentationNative:
		return "native"
	case PresentationCode:
		return "code"
	case PresentationBoth:
		return "both"
	}
	return fmt.Sprintf("Presentation(%d)", uint8(p))
}

func (p Presentation) valid() bool { return p <= PresentationBoth }

// RunCodeName is the reserved name of the code-mode tool (R107). Register
// refuses it and Restrict refuses to name it; only WithCodeMode installs
// it.
const RunCodeName = reservedName

// RunCodeTool is what WithCodeMode installs as run_code: one definition
// shared by every view that presents it (R107).
type RunCodeTool struct {
	// Definition is validated as Register validates a tool's (R11), except
	// that its Name is ignored: the tool is always named run_code.
	Definition Definition
	// Describe, if set, writes run_code's description for one view: tools
	// are the view's other tools in view order (their Schemas), key is the
	// view's scope key. It is called on every Get("run_code") and Schemas
	// of a view presenting run_code, so the description follows the view.
	// It must be quick and must not call back into the registry's reads of
	// the same view. Nil: Definition.Description for every view.
	Describe func(key string, tools []ToolSchema) string
}

// codeMode is the registry's installed run_code.
type codeMode struct {
	td       *toolDef
	describe func(key string, tools []ToolSchema) string
}

// WithCodeMode installs run_code (R107): New calls factory with the
// registry being built (so its body can run nested calls in it) and
// validates the definition it returns. Without this option no scope can
// present code: SetPresentation and WithDefaultPresentation refuse
// PresentationCode and PresentationBoth. Package codemode provides a
// factory (codemode.Install).
func WithCodeMode(factory func(*Registry) (RunCodeTool, error)) Option {
	return optionFunc(func(c *config) error {
		if factory == nil {
			return fmt.Errorf("%w: WithCodeMode: nil factory", ErrInvalidConfig)
		}
		c.codeFactory = factory
		return nil
	})
}

// WithDefaultPresentation sets the mode of a view on whose chain no scope
// declares one (PresentationNative unless set). PresentationCode and
// PresentationBoth need WithCodeMode.
func WithDefaultPresentation(p Presentation) Option {
	return optionFunc(func(c *config) error {
		if p == PresentationUnset || !p.valid() {
			return fmt.Errorf("%w: WithDefaultPresentation: %v is not a mode", ErrInvalidConfig, p)
		}
		c.presentation = p
		return nil
	})
}

// installCodeMode runs the factory of WithCodeMode (from New).
func (r *Registry) installCodeMode() error {
	if r.cfg.codeFactory == nil {
		if r.cfg.presentation > PresentationNative {
			return fmt.Errorf("%w: default presentation %v needs WithCodeMode", ErrInvalidConfig, r.cfg.presentation)
		}
		return nil
	}
	rc, err := r.cfg.codeFactory(r)
	if err != nil {
		return fmt.Errorf("%w: WithCodeMode: %w", ErrInvalidConfig, err)
	}
	def := rc.Definition
	def.Name = "run_code (code mode)" // passes the reserved-name check, renamed below
	td, err := newToolDef(def, r.cfg.schemaBound())
	if err != nil {
		return err
	}
	td.name = reservedName
	td.def.Name = reservedName
	r.code = &codeMode{td: td, describe: rc.Describe}
	return nil
}

// SetPresentation declares the scope's presentation mode (R107);
// PresentationUnset withdraws the declaration, so the scope inherits
// again. Through an owner group it declares the mode of the group's scope.
// A change notifies the change subscribers (R88).
func (s *Scope) SetPresentation(p Presentation) error {
	if !p.valid() {
		return fmt.Errorf("%w: SetPresentation: %v is not a mode", ErrInvalidConfig, p)
	}
	if p > PresentationNative && s.reg.code == nil {
		return fmt.Errorf("%w: SetPresentation(%v) needs a registry created WithCodeMode", ErrInvalidConfig, p)
	}
	changed := false
	err := s.apply(func(l *core.Layer) (*core.Layer, error) {
		next := l.WithPresentation(uint8(p))
		changed = next != l
		return next, nil
	})
	if err != nil || !changed {
		return err
	}
	return s.reg.notify()
}

// Presentation returns the scope's effective presentation mode: the
// nearest declaration on its chain, else the registry's default.
func (s *Scope) Presentation() Presentation {
	c := core.Load(s.reg.global.node, s.viewNode())
	return s.reg.presentation(&c)
}

// Presentation returns the view's effective presentation mode.
func (v View) Presentation() Presentation {
	c := core.Load(v.reg.global.node, v.reg.nodeOf(v.key))
	return v.reg.presentation(&c)
}

func (r *Registry) presentation(c *core.Chain) Presentation {
	if p := Presentation(c.Presentation()); p != PresentationUnset {
		return p
	}
	if r.cfg.presentation == PresentationUnset {
		return PresentationNative
	}
	return r.cfg.presentation
}

// presentsCode reports whether the chain's view ends with run_code.
func (r *Registry) presentsCode(c *core.Chain) bool {
	return r.code != nil && r.presentation(c) > PresentationNative
}

// lookup resolves name in the chain's view (R29, R107): the chain's entry,
// else run_code where the chain presents it (it is immune to restrictions
// and shadowing: nobody can register or restrict the name).
func (r *Registry) lookup(c *core.Chain, name string) (*toolDef, bool) {
	if e, ok := c.Lookup(name); ok {
		return e.Payload.(*toolDef), true
	}
	if name == reservedName && r.presentsCode(c) {
		return r.code.td, true
	}
	return nil, false
}

// codeOnly reports whether a call is R107's collapse: a call without a
// parent, in a view presenting code only, of a visible tool other than
// run_code.
func (r *Registry) codeOnly(c *core.Chain, name string, parent Token) bool {
	if !parent.IsZero() || name == reservedName || r.code == nil || r.presentation(c) != PresentationCode {
		return false
	}
	_, visible := c.Lookup(name)
	return visible
}

// collapse ends s as R107's collapse when it is one, before any hook: a
// final UNKNOWN_TOOL with the hint, or ABORTED_BEFORE_DISPATCH when the
// ctx is already cancelled. The finalizer captured at entry is dropped
// unless aborted. Nil: not a collapse.
func (r *Registry) collapse(s *execState) *Result {
	if r.code == nil || !r.codeOnly(&s.chain, s.name, s.parent) {
		return nil
	}
	if s.ctx().Err() != nil {
		return abortedBeforeDispatch()
	}
	s.finalizer = nil
	s.chainTool = nil
	return codeOnlyUnknown(s.name)
}

func codeOnlyUnknown(name string) *Result {
	return codedFailure(NameToolNotFound, CodeUnknownTool, fmt.Sprintf(
		"unknown tool %q: only run_code can be called directly here; call %s from inside a run_code program", name, name))
}

// viewWithCode appends run_code's schema to a view's schemas when the
// chain presents it (R107), with the description written for this view.
func (r *Registry) viewWithCode(c *core.Chain, key string, out []ToolSchema) []ToolSchema {
	if !r.presentsCode(c) {
		return out
	}
	td := r.code.td
	var params []byte
	if td.params != nil {
		params = cloneBytes(td.params)
	}
	return append(out, ToolSchema{Name: reservedName, Description: r.codeDescription(key, out), Parameters: params})
}

// codeDescription is run_code's description for one view; a Describe
// that panics leaves the definition's own.
func (r *Registry) codeDescription(key string, tools []ToolSchema) (desc string) {
	desc = r.code.td.def.Description
	if r.code.describe == nil {
		return desc
	}
	defer func() {
		if p := recover(); p != nil {
			r.report(fmt.Errorf("run_code Describe panicked: %v", p))
		}
	}()
	return r.code.describe(key, tools)
}

// codeTool is the installed run_code definition, or nil.
func (r *Registry) codeTool() *toolDef {
	if r.code == nil {
		return nil
	}
	return r.code.td
}

// codeDescriptionFor is run_code's description in node's view.
func (r *Registry) codeDescriptionFor(chain *core.Chain, node *core.Node) string {
	out, err := r.nativeSchemas(chain)
	if err != nil {
		return r.code.td.def.Description
	}
	return r.codeDescription(nodeKey(node), out)
}

func nodeKey(node *core.Node) string {
	if node == nil {
		return ""
	}
	return node.Key
}
