package validate

import (
	"strings"
	"unicode/utf8"
)

// Text refuses, at loc, a string PostgreSQL text cannot store (a NUL) or that is not UTF-8.
func (e *Errors) Text(loc []any, s string) {
	switch {
	case !utf8.ValidString(s):
		e.Add(loc, TypeString, "String should be valid UTF-8.", nil)
	case HasNUL(s):
		e.Add(loc, TypeValue, "String should not contain NUL characters.", nil)
	}
}

// Name refuses, at loc, a name that is only whitespace, besides Text's rules.
func (e *Errors) Name(loc []any, s string) {
	if s != "" && blank(s) {
		e.Add(loc, TypeStringTooShort, "String should not be blank.", s)
		return
	}
	e.Text(loc, s)
}

// HasNUL reports whether s holds a NUL byte.
func HasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

func blank(s string) bool {
	for _, r := range s {
		if r != ' ' && r != '\t' && r != '\n' && r != '\r' && r != '\v' && r != '\f' && r != 0xA0 && r != 0x3000 {
			return false
		}
	}
	return true
}
