package core

// toolTable is an immutable name → entry map with cheap functional updates.
//
// A full copy per registration would make registering n tools cost O(n²).
// Instead a table is a large immutable base plus a small immutable delta
// (a nil entry in the delta is a deletion). An update copies only the delta;
// once the delta outgrows about √n entries it is merged into a new base, so
// an update costs O(√n) amortized and a lookup at most two map reads.
type toolTable struct {
	base  map[string]*Entry
	delta map[string]*Entry
	n     int
}

func (t toolTable) get(name string) (*Entry, bool) {
	if t.delta != nil {
		if e, ok := t.delta[name]; ok {
			return e, e != nil
		}
	}
	e, ok := t.base[name]
	return e, ok
}

func (t toolTable) with(name string, e *Entry) toolTable {
	_, had := t.get(name)
	out := t.put(name, e)
	if !had {
		out.n++
	}
	return out
}

func (t toolTable) without(name string) toolTable {
	if _, had := t.get(name); !had {
		return t
	}
	var out toolTable
	if _, inBase := t.base[name]; inBase {
		out = t.put(name, nil)
	} else {
		// Only in the delta: drop it there.
		d := make(map[string]*Entry, len(t.delta))
		for k, v := range t.delta {
			if k != name {
				d[k] = v
			}
		}
		out = toolTable{base: t.base, delta: d, n: t.n}
	}
	out.n--
	return out
}

func (t toolTable) put(name string, e *Entry) toolTable {
	d := make(map[string]*Entry, len(t.delta)+1)
	for k, v := range t.delta {
		d[k] = v
	}
	d[name] = e
	out := toolTable{base: t.base, delta: d, n: t.n}
	if len(d) > 16+isqrt(len(t.base)) {
		out = out.merged()
	}
	return out
}

func (t toolTable) merged() toolTable {
	b := make(map[string]*Entry, t.n+1)
	for k, v := range t.base {
		b[k] = v
	}
	for k, v := range t.delta {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return toolTable{base: b, n: t.n}
}

func (t toolTable) each(f func(*Entry)) {
	for k, v := range t.base {
		if t.delta != nil {
			if _, shadowed := t.delta[k]; shadowed {
				continue
			}
		}
		f(v)
	}
	for _, v := range t.delta {
		if v != nil {
			f(v)
		}
	}
}

func isqrt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}
