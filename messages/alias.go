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

// Short names for the generated [Outcome] values (docs/contract.md#outcomes).
const (
	OutcomeUnspecified = Outcome_OUTCOME_UNSPECIFIED
	OutcomeOK          = Outcome_OUTCOME_OK
	OutcomeDenied      = Outcome_OUTCOME_DENIED
	OutcomeFailed      = Outcome_OUTCOME_FAILED
	OutcomeTimedOut    = Outcome_OUTCOME_TIMED_OUT
	OutcomeCancelled   = Outcome_OUTCOME_CANCELLED
	OutcomeRefused     = Outcome_OUTCOME_REFUSED
)

// Word returns the outcome's word, as runtime.Outcome.String writes it:
// "ok", "denied", "failed", "timed_out", "cancelled", "refused" ("" for
// OUTCOME_UNSPECIFIED).
func (o Outcome) Word() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeDenied:
		return "denied"
	case OutcomeFailed:
		return "failed"
	case OutcomeTimedOut:
		return "timed_out"
	case OutcomeCancelled:
		return "cancelled"
	case OutcomeRefused:
		return "refused"
	}
	return ""
}
