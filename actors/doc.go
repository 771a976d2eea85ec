// Package actors holds toolscope's supervisor actor shell (protoactor-go).
// The scope actor, whose mutation message is an in-process protocol, lives
// in internal/actorsys, out of reach of code outside the module.
//
//	supervisor actor  one per scope, spawned on first contention or turn: decides
//	                  admission (internal/admit) — parallel calls overlap,
//	                  an exclusive call runs alone, first come first served —
//	                  and gives each turn its go-ahead. Its queue and pending
//	                  requests live with its host (SupervisorHost); a Wake
//	                  message only tells it to look, so a Wake sent by anyone
//	                  else costs one empty step and nothing more.
//
// State lives in the published snapshots and the supervisor's host, not in
// the actor structs, so an actor restarted by protoactor — or stopped and
// respawned by the runtime under the same PID — carries on with the same
// registrations and admission queue, and no request is lost with a dropped
// mailbox.
// Only package runtime uses this package.
package actors
