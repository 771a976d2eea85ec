package agent

import "github.com/toolscope/toolscope/runtime"

// modelTools is what a step offers the model from the scope's schemas: in
// code mode (R107) only run_code — the other tools are reachable only from
// a run_code program, whose description already lists them — else every
// schema of the view.
func modelTools(scope *runtime.Scope, tools []runtime.ToolSchema) []runtime.ToolSchema {
	if len(tools) == 0 || scope.Presentation() != runtime.PresentationCode {
		return tools
	}
	if last := tools[len(tools)-1]; last.Name == runtime.RunCodeName {
		return tools[len(tools)-1:]
	}
	return tools
}
