// Command consumer-gemini is CI's stand-in for a user's module that requires
// only github.com/toolscope/toolscope/providers/gemini, as published.
package main

import (
	"fmt"

	"google.golang.org/genai"

	"github.com/toolscope/toolscope/providers/gemini"
)

func main() {
	_ = gemini.New
	_ = genai.Content{}
	fmt.Println("ok")
}
