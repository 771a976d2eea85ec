// Package openai connects toolscope to OpenAI models through the official
// Go SDK (github.com/openai/openai-go/v3).
package openai
