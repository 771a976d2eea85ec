// Command consumer-openai is CI's stand-in for a user's module that requires
// only github.com/toolscope/toolscope/providers/openai, as published.
package main

import (
	"fmt"

	oai "github.com/openai/openai-go/v3"

	"github.com/toolscope/toolscope/providers/openai"
)

func main() {
	client := oai.NewClient()
	_ = openai.NewChatModel(&client, oai.ChatCompletionNewParams{Model: "gpt-4.1-mini"})
	fmt.Println("ok")
}
