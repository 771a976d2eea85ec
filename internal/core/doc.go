// Package core is the pure state of toolscope's scopes: immutable layers
// (tools, restrictions, guards, hooks), the nodes that link a scope key to
// its parent and its published layer, and view resolution over a chain
// (docs/contract.md §1–§5, R29, R109). It has no actors and no user types: payloads are
// opaque. A layer is never changed once published; every mutation returns a
// new one, which the owning scope actor publishes with an atomic store.
package core
