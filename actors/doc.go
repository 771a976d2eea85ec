// Package actors holds toolscope's actor shells (protoactor-go).
//
//	scope actor       single writer of one scope's layer: applies Mutate
//	                  messages (pure functions from layer to layer, never
//	                  user code), publishes the new immutable snapshot on the
//	                  scope's node and answers on the message's channel.
//	                  Protobuf requests (package messages) are answered by a
//	                  Handler on a goroutine of their own.
//	supervisor actor  one per scope, spawned on first execution: owns the
//	                  admission state (internal/admit) — parallel calls
//	                  overlap, an exclusive call runs alone, first come first
//	                  served — and starts each turn's runner (RunTurn).
//
// State lives in the published snapshots, not in the actor structs, so an
// actor restarted by protoactor carries on with the same registrations.
// Only package runtime uses this package.
package actors
