// Package mcp connects toolscope to the Model Context Protocol through the
// official Go SDK (github.com/modelcontextprotocol/go-sdk).
package mcp
