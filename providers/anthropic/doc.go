// Package anthropic connects toolscope to Anthropic models through the
// official Go SDK (github.com/anthropics/anthropic-sdk-go/v2).
package anthropic
