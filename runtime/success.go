package runtime

// Success creation (R62–R64, R78): what a body's value, a wrapper's foreign
// success (R65) or a post-execute AcceptValue (R69) becomes.

// createSuccess is success creation (R62, R64, R78). value is any lossless
// JSON value, including canonical bytes.
func (r *Registry) createSuccess(s *execState, td *toolDef, value any) *Result {
	var b []byte
	if _, ok := value.(typedOutMarker); ok {
		b, s.typedOut = s.typedOut, nil
	} else if raw, ok := value.(canonical); ok {
		b = raw
	} else {
		var err error
		if b, err = encodeJSON(value); err != nil {
			return invalidOutput(td.name, "value is not lossless JSON")
		}
	}
	if v := td.outSchema.Validate(b, "value"); len(v) > 0 {
		return invalidOutput(td.name, v...)
	}
	if td.trustedRender {
		// The typed helper's own renderer keeps and changes nothing; its
		// one text block (no Data to check) shares the result's allocation.
		rb := s.resultSlot()
		rb.block[0] = renderDefault(b)
		rb.res.value, rb.res.content = b, rb.block[:]
		return r.withMeta(s, td, &rb.res, b)
	}
	content, err := callRender(td.def.Output.Render, s.ctx(), s.args, b)
	if err != nil {
		return invalidOutput(td.name, "Output.Render failed: "+messageOf(err))
	}
	if !blocksSafe(content) {
		return invalidOutput(td.name, "Output.Render returned non-lossless JSON")
	}
	rb := s.resultSlot()
	if len(content) == 1 {
		// The usual single block is copied into the result's allocation.
		rb.block[0] = content[0]
		rb.block[0].Data = cloneBytes(content[0].Data)
		content = rb.block[:]
	} else {
		content = cloneBlocks(content)
	}
	rb.res.value, rb.res.content = b, content
	return r.withMeta(s, td, &rb.res, b)
}

// rebuildSuccess creates a success from value with the definition visible
// now (R65's foreign success, R69's AcceptValue): UNKNOWN_TOOL when the
// tool is gone.
func (r *Registry) rebuildSuccess(s *execState, value any) *Result {
	td, ok := r.resolve(s.node, s.name)
	if !ok {
		return unknownTool(s.name)
	}
	return r.createSuccess(s, td, value)
}

// withMeta adds presentation metadata (R64) and the turn mark to a new
// success.
func (r *Registry) withMeta(s *execState, td *toolDef, res *Result, b []byte) *Result {
	if s.parent.IsZero() && td.def.Output.PresentationMeta != nil {
		m, err := callMeta(td.def.Output.PresentationMeta, s.ctx(), s.args, b)
		if err != nil {
			return invalidOutput(td.name, "Output.PresentationMeta failed: "+messageOf(err))
		}
		mb, err := encodeJSON(m)
		if err != nil {
			return invalidOutput(td.name, "Output.PresentationMeta returned non-lossless JSON")
		}
		res.meta = mb
	}
	res.concludes = s.concluded.Load()
	return res
}

// resultWithBlock is a result and its single content block in one
// allocation.
type resultWithBlock struct {
	res   Result
	block [1]Block
}

// resultSlot returns the zero result its first success goes in: the one
// allocated with its turn, if any and not taken yet, else a new one.
func (s *execState) resultSlot() *resultWithBlock {
	if rb := s.slot; rb != nil {
		s.slot = nil
		return rb
	}
	return &resultWithBlock{}
}
