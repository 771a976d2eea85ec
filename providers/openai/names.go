package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/toolname"
	"github.com/toolscope/toolscope/runtime"
)

// ToolName returns the function name a tool named name is sent under:
// name itself when OpenAI accepts it (^[a-zA-Z0-9_-]{1,64}$); otherwise
// name with every other character replaced by "_", cut to fit, followed by
// "_" and ten hex digits of its SHA-256 (an MCP tool "fs.read_file" is sent
// as "fs_read_file_<hash>"). It depends on name alone, so it is the same
// on every request. ChatModel and ResponsesModel map the calls the model
// makes by such a name back to the tool's name; a loop of one's own does
// the same with the tools it sent.
func ToolName(name string) string { return toolname.OpenAI.Wire(name) }

// preparedTool is one tool as OpenAI takes it.
type preparedTool struct {
	name, description string
	params            json.RawMessage
	strict            bool
}

// prepareTools maps the schemas to the tools sent: names mapped
// (toolname.OpenAI), parameter schemas through StrictParameters; a tool
// OpenAI cannot take is skipped.
func prepareTools(schemas []runtime.ToolSchema) ([]preparedTool, *toolname.Names, []agent.SkippedTool) {
	names := make([]string, len(schemas))
	for i, s := range schemas {
		names[i] = s.Name
	}
	wire, m := toolname.OpenAI.Assign(names)
	out := make([]preparedTool, 0, len(schemas))
	var skipped []agent.SkippedTool
	for i, s := range schemas {
		if wire[i] == "" {
			skipped = append(skipped, agent.SkippedTool{Name: s.Name, Reason: toolname.ErrNameTaken(toolname.OpenAI, s.Name).Error()})
			continue
		}
		if err := toolname.ObjectSchema(s.Parameters); err != nil {
			skipped = append(skipped, agent.SkippedTool{Name: s.Name, Reason: err.Error()})
			continue
		}
		params, strict, err := StrictParameters(s.Parameters)
		if err != nil {
			skipped = append(skipped, agent.SkippedTool{Name: s.Name, Reason: fmt.Sprintf("its parameter schema: %v", err)})
			continue
		}
		out = append(out, preparedTool{name: wire[i], description: s.Description, params: params, strict: strict})
	}
	return out, m, skipped
}

// toolNames maps the calls' names back to their tools' names, in place.
func toolNames(m *toolname.Names, calls []runtime.TurnCall) []runtime.TurnCall {
	if m.Mapped() {
		for i := range calls {
			calls[i].Name = m.Tool(calls[i].Name)
		}
	}
	return calls
}

// warnSkipped logs each tool left out of a request.
func warnSkipped(l *slog.Logger, skipped []agent.SkippedTool) {
	if len(skipped) == 0 {
		return
	}
	if l == nil {
		l = slog.Default()
	}
	for _, s := range skipped {
		l.LogAttrs(context.Background(), slog.LevelWarn, "openai: tool left out of the request", slog.String("tool", s.Name), slog.String("reason", s.Reason))
	}
}
