package jsonv

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// text is the set of byte-string representations the lexical helpers accept,
// so the same code serves json.Number/string values and spans of input bytes
// without converting (and allocating) one into the other.
type text interface{ ~string | ~[]byte }

// isSpace reports JSON insignificant whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// skipSpace returns the index of the first non-whitespace byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// strSafe marks ASCII bytes that may appear unescaped inside a canonical
// JSON string: everything from 0x20 except '"' and '\\'.
var strSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString scans the JSON string whose opening quote is b[i]. It returns
// the index after the closing quote and whether the content differs from its
// canonical form (it holds an escape or invalid UTF-8) and therefore must be
// decoded. ok is false for a malformed string.
func scanString(b []byte, i int) (end int, decode, ok bool) {
	i++
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if strSafe[c] {
				i++
				continue
			}
			switch {
			case c == '"':
				return i + 1, decode, true
			case c == '\\':
				decode = true
				if i+1 >= len(b) {
					return 0, false, false
				}
				switch b[i+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					i += 2
				case 'u':
					if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
						return 0, false, false
					}
					i += 6
				default:
					return 0, false, false
				}
			default: // raw control character
				return 0, false, false
			}
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			decode = true
		}
		i += size
	}
	return 0, false, false
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if hexVal(c) < 0 {
			return false
		}
	}
	return true
}

func hexVal(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// scanNumber scans the JSON number literal starting at s[i]. It returns the
// index after the literal and whether the literal is outside the lossless
// set (R47 applied to the value it denotes): it denotes negative zero
// ("-0", "-0.0e5", …), or its float64 rounding is ±Inf ("1e999", "2e308")
// or −0 ("-1e-400"). ok is false for a malformed literal.
func scanNumber[T text](s T, i int) (end int, lossy, ok bool) {
	start := i
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	if i >= len(s) {
		return 0, false, false
	}
	zero := true
	switch c := s[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		zero = false
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		return 0, false, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		frac := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			if s[i] != '0' {
				zero = false
			}
			i++
		}
		if i == frac {
			return 0, false, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		digits := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if i == digits {
			return 0, false, false
		}
	} else if i-start <= plainLimit {
		// Without an exponent and this short, the magnitude is within
		// (1e-300, 1e300): only a zero can be −0, nothing is infinite.
		return i, neg && zero, true
	}
	if zero {
		return i, neg, true
	}
	inf, negZero := numRound(s[start:i])
	return i, inf || negZero, true
}

// plainLimit is the longest literal without an exponent that needs no
// range check: it has fewer than 309 integer digits, and a non-zero
// fraction of it is larger than 1e-300.
const plainLimit = 300

// numberLiteral reports whether s is exactly one JSON number literal and
// whether it is outside the lossless set (see scanNumber).
func numberLiteral[T text](s T) (ok, lossy bool) {
	end, l, ok := scanNumber(s, 0)
	return ok && end == len(s), l
}

// dec is a decimal number literal split into its parts: the value is
// ±0.D × 10^exp where D = intp ++ frac with leading zeros not yet stripped.
type dec[T text] struct {
	neg        bool
	intp, frac T
	exp        int64 // saturated to ±1e15, far beyond any float64
}

const expLimit = 1_000_000_000_000_000

// parseDec splits a literal already known to be valid.
func parseDec[T text](s T) dec[T] {
	var d dec[T]
	i := 0
	if len(s) > 0 && s[0] == '-' {
		d.neg = true
		i++
	}
	start := i
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	d.intp = s[start:i]
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		d.frac = s[start:i]
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		var e int64
		for ; i < len(s); i++ {
			if e < expLimit {
				e = e*10 + int64(s[i]-'0')
			}
		}
		if e > expLimit {
			e = expLimit
		}
		if eneg {
			e = -e
		}
		d.exp = e
	}
	return d
}

func (d *dec[T]) ndigits() int { return len(d.intp) + len(d.frac) }

func (d *dec[T]) digit(k int) byte {
	if k < len(d.intp) {
		return d.intp[k]
	}
	return d.frac[k-len(d.intp)]
}

// sig returns the index range [lo, hi) of the significant digits (leading
// and trailing zeros stripped); lo == hi means the value is zero.
func (d *dec[T]) sig() (lo, hi int) {
	n := d.ndigits()
	for lo < n && d.digit(lo) == '0' {
		lo++
	}
	hi = n
	for hi > lo && d.digit(hi-1) == '0' {
		hi--
	}
	return lo, hi
}

// numEqual reports whether two valid literals denote the same number,
// exactly (1, 1.0 and 10e-1 are equal; 0 and -0 are equal as in JavaScript).
func numEqual[A, B text](a A, b B) bool {
	da, db := parseDec(a), parseDec(b)
	la, ha := da.sig()
	lb, hb := db.sig()
	if la == ha || lb == hb {
		return la == ha && lb == hb
	}
	if da.neg != db.neg || ha-la != hb-lb {
		return false
	}
	// Position of the decimal point relative to the first significant digit.
	pa := int64(len(da.intp)-la) + da.exp
	pb := int64(len(db.intp)-lb) + db.exp
	if pa != pb {
		return false
	}
	for k := 0; k < ha-la; k++ {
		if da.digit(la+k) != db.digit(lb+k) {
			return false
		}
	}
	return true
}

// numIntegral reports whether a valid literal denotes an integer, exactly.
func numIntegral[T text](s T) bool {
	d := parseDec(s)
	lo, hi := d.sig()
	if lo == hi {
		return true
	}
	// Digits at index >= point are fractional.
	point := int64(len(d.intp)) + d.exp
	return int64(hi) <= point
}

// numFinite reports whether a valid literal rounds to a finite float64.
func numFinite[T text](s T) bool {
	if len(s) <= plainLimit {
		plain := true
		for i := 0; i < len(s); i++ {
			if s[i] == 'e' || s[i] == 'E' {
				plain = false
				break
			}
		}
		if plain {
			return true // fewer than 309 integer digits
		}
	}
	inf, _ := numRound(s)
	return !inf
}

// numRound reports whether the float64 nearest to a valid literal is ±Inf,
// and whether it is −0. It decides from the decimal exponent, without
// allocating; only literals within a factor of ten of the float64 range's
// ends (about 1.8e308 and 2.5e-324) take strconv.ParseFloat.
func numRound[T text](s T) (inf, negZero bool) {
	d := parseDec(s)
	lo, hi := d.sig()
	if lo == hi {
		return false, d.neg
	}
	// The value is 0.D × 10^p, D the significant digits: its magnitude is
	// in [10^(p-1), 10^p).
	p := int64(len(d.intp)-lo) + d.exp
	switch {
	case p >= 310: // ≥ 1e309 > MaxFloat64
		return true, false
	case p <= -324: // < 1e-324, below half the smallest subnormal: rounds to 0
		return false, d.neg
	case p <= 308 && p >= -322: // in [1e-323, 1e308): finite, not zero
		return false, false
	}
	f, _ := strconv.ParseFloat(string(s), 64)
	return math.IsInf(f, 0), f == 0 && math.Signbit(f)
}

// appendFloat formats a finite float64 the way encoding/json and
// JavaScript do: shortest round-trip digits, exponent form outside
// [1e-6, 1e21).
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendQuoted appends s as a canonical JSON string: only '"', '\\' and
// control characters are escaped (short forms where JSON has them, else
// \u00xx), invalid UTF-8 becomes U+FFFD, everything else is copied.
func appendQuoted[T text](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if strSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendEscapedASCII(dst, c)
			i++
			start = i
			continue
		}
		r, size := decodeRune(s, i)
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// decodeRune decodes the UTF-8 sequence at s[i] without converting s.
func decodeRune[T text](s T, i int) (rune, int) {
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], s[i:min(i+utf8.UTFMax, len(s))])
	return utf8.DecodeRune(buf[:n])
}

const hexDigits = "0123456789abcdef"

func appendEscapedASCII(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// decodeEscape decodes the escape sequence at body[i] == '\\' of a scanned
// string body, combining a surrogate pair and replacing a lone surrogate by
// U+FFFD. It returns the rune and the index after the sequence.
func decodeEscape(body []byte, i int) (rune, int) {
	switch body[i+1] {
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	case 'u':
		r := hex4(body[i+2:])
		i += 6
		if 0xD800 <= r && r < 0xDC00 && i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
			if r2 := hex4(body[i+2:]); 0xDC00 <= r2 && r2 < 0xE000 {
				return 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00), i + 6
			}
		}
		if 0xD800 <= r && r < 0xE000 {
			r = utf8.RuneError
		}
		return r, i
	}
	return rune(body[i+1]), i + 2 // '"', '\\', '/'
}

// appendUnescaped appends the decoded content of a scanned JSON string body
// (without quotes) as UTF-8: escapes resolved, surrogate pairs combined,
// lone surrogates and invalid UTF-8 replaced by U+FFFD.
func appendUnescaped(dst, body []byte) []byte {
	for i := 0; i < len(body); {
		c := body[i]
		if c == '\\' {
			var r rune
			r, i = decodeEscape(body, i)
			dst = utf8.AppendRune(dst, r)
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, body[i:i+size]...)
		}
		i += size
	}
	return dst
}

// appendCanonicalBody appends the canonical quoted form of a scanned string
// body that needs decoding (see scanString), without an intermediate copy.
func appendCanonicalBody(dst, body []byte) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(body); {
		c := body[i]
		if c == '\\' {
			var r rune
			r, i = decodeEscape(body, i)
			if r < utf8.RuneSelf {
				if strSafe[r] {
					dst = append(dst, byte(r))
				} else {
					dst = appendEscapedASCII(dst, byte(r))
				}
			} else {
				dst = utf8.AppendRune(dst, r)
			}
			continue
		}
		if c < utf8.RuneSelf { // raw ASCII in a scanned string is always safe
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, body[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

func hex4(b []byte) rune {
	return hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3])
}

// unescape returns the decoded value of a scanned string body.
func unescape(body []byte) string {
	return string(appendUnescaped(make([]byte, 0, len(body)), body))
}
