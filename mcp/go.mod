module github.com/toolscope/toolscope/mcp

go 1.26.0

require github.com/toolscope/toolscope v0.0.0

require github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect

replace github.com/toolscope/toolscope => ../
