package toolname_test

import (
	"fmt"

	"github.com/toolscope/toolscope/providers/toolname"
)

// A request's tools: a valid name is sent as it is, an MCP tool's dotted
// name is sent mapped, and the model's call by the mapped name is mapped
// back to the tool.
func ExampleRule_Assign() {
	wire, names := toolname.OpenAI.Assign([]string{"search", "fs.read"})
	fmt.Println(wire)
	fmt.Println(names.Mapped(), names.Tool(wire[1]), names.Tool("search"))
	// Output:
	// [search fs_read_4074bc0257]
	// true fs.read search
}
