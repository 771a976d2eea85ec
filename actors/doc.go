// Package actors holds toolscope's actor shells (protoactor-go).
//
//	scope actor       single writer of one scope's layer: applies Mutate
//	                  messages (pure functions from layer to layer, never
//	                  user code), publishes the new immutable snapshot on the
//	                  scope's node and answers on the message's channel.
//	                  Protobuf requests (package messages) are answered by a
//	                  Handler off the actor, through a Spawner (the runtime's
//	                  warm workers).
//	supervisor actor  one per scope, spawned on first contention or turn: decides
//	                  admission (internal/admit) — parallel calls overlap,
//	                  an exclusive call runs alone, first come first served —
//	                  and gives each turn its go-ahead. Its queue and pending
//	                  requests live with its host (SupervisorHost); a Wake
//	                  message only tells it to look.
//
// State lives in the published snapshots and the supervisor's host, not in
// the actor structs, so an actor restarted by protoactor — or stopped and
// respawned by the runtime under the same PID — carries on with the same
// registrations and admission queue, and no request is lost with a dropped
// mailbox.
// Only package runtime uses this package.
package actors
