// Command loop runs toolscope's agent loop against a scripted model server
// on loopback that speaks the OpenAI Chat Completions wire protocol, through
// the official Go SDK. It needs no network and no API key:
//
//	go run ./providers/openai/examples/loop
//
// The scripted model asks for seven tools in one assistant message: three
// reads that run in parallel (each waits until all three are in flight), a
// write that is an exclusive barrier, one more read, a delete that a guard
// denies and a fetch that fails. The model then answers from the tool
// messages it received. The program prints the transcript and the turn's
// record of starts and results.
package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loop:", err)
		os.Exit(1)
	}
}
