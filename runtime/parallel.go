package runtime

import "reflect"

// AlwaysParallel reports whether every call of the tool with valid
// arguments is parallel (R36) whatever the arguments: the definition was
// made by NewTool with WithParallel and still has that classifier. A
// definition with its own IsConcurrencySafe, or made with WithClassifier,
// reports false even if it answers true for every call: the answer is
// per call. An exporter uses it to declare a tool read-only (the MCP
// exporter's readOnlyHint).
func (d Definition) AlwaysParallel() bool {
	return d.typed != nil && d.typed.alwaysParallel && d.IsConcurrencySafe != nil &&
		reflect.ValueOf(d.IsConcurrencySafe).Pointer() == d.typed.classPtr
}
