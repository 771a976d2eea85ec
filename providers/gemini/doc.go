// Package gemini connects toolscope to Gemini models through the official
// Go SDK (google.golang.org/genai).
package gemini
