// Package optional is a field of a change that may be absent (leave the stored value), an explicit
// null (clear it) or a value (set it): the PATCH semantics the domain services apply, whichever door
// decoded the request.
package optional

// Value is one such field. Set false: absent; Set and Null: cleared; Set only: Value.
type Value[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Of is a set value.
func Of[T any](v T) Value[T] { return Value[T]{Set: true, Value: v} }

// Ptr is the field's new value as a pointer: nil when cleared (only meaningful when Set).
func (v Value[T]) Ptr() *T {
	if v.Null {
		return nil
	}
	x := v.Value
	return &x
}
