package messages

// Short names for the generated enum constants.
const (
	// ModeUnspecified is [ExecutionMode_EXECUTION_MODE_UNSPECIFIED]: the call
	// was not classified (an execution outside a turn).
	ModeUnspecified = ExecutionMode_EXECUTION_MODE_UNSPECIFIED
	// ModeExclusive is [ExecutionMode_EXECUTION_MODE_EXCLUSIVE]: the call
	// runs alone and is a barrier.
	ModeExclusive = ExecutionMode_EXECUTION_MODE_EXCLUSIVE
	// ModeParallel is [ExecutionMode_EXECUTION_MODE_PARALLEL]: the call may
	// overlap with other parallel calls of its group.
	ModeParallel = ExecutionMode_EXECUTION_MODE_PARALLEL

	// TurnEventCallStarted is [TurnEvent_KIND_CALL_STARTED]: a call of the
	// turn was started (or synthetically started after an abort).
	TurnEventCallStarted = TurnEvent_KIND_CALL_STARTED
	// TurnEventResult is [TurnEvent_KIND_RESULT]: a call's result was
	// committed.
	TurnEventResult = TurnEvent_KIND_RESULT
)

// Values of [ExecutionFinished.OutcomeCode] for failures without an
// [ErrorInfo]. A coded failure reports its ErrorInfo.Code instead, and a
// success reports the empty string.
const (
	// OutcomeDenied marks an uncoded denial by pre-execute, approval or a
	// guard (R57).
	OutcomeDenied = "DENIED"
	// OutcomeError marks any other uncoded failure.
	OutcomeError = "ERROR"
)
