// Package clustermsg is the wire protocol between a cluster client and the
// grain hosting one agent tree (package cluster), generated from
// clustermsg.proto. Calls, results, turns and schemas travel as the types of
// package messages; every request adds a Header: the tree, the scope, the
// client's call id (reused on retry), the caller's deadline and its W3C
// trace context.
//
// Requests and their replies: ExecuteRequest → ExecuteReply (always a
// result), ExecuteTurnRequest → ExecuteTurnReply (a result per call, in
// model order), GetRequest → GetReply, SchemasRequest → SchemasReply,
// ExecutionModeRequest → ExecutionModeReply, RestrictRequest,
// MountRequest, AddGuardRequest, UndoRequest, NewScopeRequest and
// DisposeRequest → MutationReply; CancelRequest has no reply.
package clustermsg

//go:generate ./gen.sh
