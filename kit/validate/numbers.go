package validate

import (
	"strconv"
)

// maxNumberLen bounds the text of a JSON number kept as a number: longer ones (Postgres numeric holds
// at most 16 383 digits after the point, and a long literal expands in jsonb) are kept as text.
const maxNumberLen = 400

// maxExponent bounds a number's written exponent: 1e-400 parses in Go (as 0) but a literal such as
// 1e-20000 or 1e200000 overflows Postgres numeric, and 1e131071 expands to 131 072 digits in jsonb.
const maxExponent = 400

// QuoteWildNumbers returns raw (valid JSON) with every number that float64 cannot hold (1e309), or
// that jsonb could not hold or would expand (an exponent beyond ±400, a literal over 400 characters),
// replaced by a JSON string of its text, and how many it replaced. Without any, raw itself is
// returned. Such a number never costs an alert (security review R4-12): decoders read it as text,
// and the body as received is kept beside it.
func QuoteWildNumbers(raw []byte) ([]byte, int) {
	var (
		out   []byte
		last  int
		count int
	)
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '"' {
			i = skipString(raw, i)
			continue
		}
		if c != '-' && (c < '0' || c > '9') {
			continue
		}
		j := i
		for j < len(raw) && isNumberByte(raw[j]) {
			j++
		}
		if wildNumber(raw[i:j]) {
			if out == nil {
				out = make([]byte, 0, len(raw)+16)
			}
			out = append(out, raw[last:i]...)
			out = append(out, '"')
			out = append(out, raw[i:j]...)
			out = append(out, '"')
			last = j
			count++
		}
		i = j - 1
	}
	if count == 0 {
		return raw, 0
	}
	return append(out, raw[last:]...), count
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// skipString returns the index of the closing quote of the string starting at raw[i].
func skipString(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(raw)
}

// wildNumber reports whether the number literal tok is one QuoteWildNumbers keeps as text.
func wildNumber(tok []byte) bool {
	if len(tok) > maxNumberLen {
		return true
	}
	for k, c := range tok {
		if c == 'e' || c == 'E' {
			exp, err := strconv.Atoi(string(tok[k+1:]))
			if err != nil || exp > maxExponent || exp < -maxExponent {
				return true
			}
			break
		}
	}
	_, err := strconv.ParseFloat(string(tok), 64)
	return err != nil
}
