package jsonv

// quickDepth bounds the quick check's recursion; deeper input takes the
// full validator.
const quickDepth = 64

// quickValid reports whether v certainly satisfies sn, walking the bytes
// once without building a tape. It answers only for the common shape of
// tool arguments and outputs — compact text (no whitespace), keys without
// escapes, schemas without enum, const or oneOf — and returns false for
// anything else and for every violation, so the caller runs the full
// validator, which finds the messages. true is exact: the full validator
// would report nothing (FuzzQuickValidAgreesWithValidate checks it).
func quickValid(sn *snode, v []byte) bool {
	end, ok := quickValue(sn, v, 0, 0)
	return ok && end == len(v)
}

func quickValue(sn *snode, b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > quickDepth || sn.hasEnum || sn.hasConst {
		return i, false
	}
	c := b[i]
	switch sn.kind {
	case sAny:
		return quickAny(b, i, depth)
	case sObject:
		if c != '{' {
			return i, false
		}
		return quickObject(sn, b, i+1, depth)
	case sArray:
		if c != '[' {
			return i, false
		}
		return quickArray(sn.items, b, i+1, depth)
	case sString:
		if c != '"' {
			return i, false
		}
		end, _, ok := scanString(b, i)
		return end, ok
	case sNumber, sInteger:
		end, lossy, ok := scanNumber(b, i)
		if !ok || lossy || sn.kind == sInteger && !numIntegral(b[i:end]) {
			return i, false
		}
		return end, true
	case sBoolean:
		if c == 't' {
			return quickLiteral(b, i, "true")
		}
		return quickLiteral(b, i, "false")
	case sNull:
		return quickLiteral(b, i, "null")
	}
	return i, false // sOneOf
}

// quickObject checks the members after '{' at b[i-1] against sn.
func quickObject(sn *snode, b []byte, i, depth int) (int, bool) {
	if len(sn.required) > 64 {
		return i, false
	}
	var seen uint64
	if i < len(b) && b[i] == '}' {
		return i + 1, len(sn.required) == 0
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		end, decode, ok := scanString(b, i)
		if !ok || decode || end >= len(b) || b[end] != ':' {
			return i, false
		}
		key := b[i+1 : end-1]
		i = end + 1
		var node *snode
		if sn.index != nil {
			if k, ok := sn.index[string(key)]; ok {
				node = sn.props[k].node
			}
		} else {
			for k := range sn.props {
				if sn.props[k].name == string(key) {
					node = sn.props[k].node
					break
				}
			}
		}
		switch {
		case node != nil:
			i, ok = quickValue(node, b, i, depth+1)
		case sn.closed:
			return i, false
		default:
			i, ok = quickAny(b, i, depth+1)
		}
		if !ok || i >= len(b) {
			return i, false
		}
		for k, r := range sn.required {
			if r == string(key) {
				seen |= 1 << k
				break
			}
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, seen == 1<<len(sn.required)-1
		default:
			return i, false
		}
	}
}

// quickAny checks that b[i:] starts with a compact lossless value.
func quickAny(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > quickDepth {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		i++
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			end, _, ok := scanString(b, i)
			if !ok || end >= len(b) || b[end] != ':' {
				return i, false
			}
			if i, ok = quickAny(b, end+1, depth+1); !ok || i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i++
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		return quickArray(nil, b, i+1, depth)
	case c == '"':
		end, _, ok := scanString(b, i)
		return end, ok
	case c == 't':
		return quickLiteral(b, i, "true")
	case c == 'f':
		return quickLiteral(b, i, "false")
	case c == 'n':
		return quickLiteral(b, i, "null")
	default:
		end, lossy, ok := scanNumber(b, i)
		return end, ok && !lossy
	}
}

// quickArray checks the elements after '[' at b[i-1] against items (nil:
// any lossless value).
func quickArray(items *snode, b []byte, i, depth int) (int, bool) {
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if items != nil {
			i, ok = quickValue(items, b, i, depth+1)
		} else {
			i, ok = quickAny(b, i, depth+1)
		}
		if !ok || i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func quickLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}
