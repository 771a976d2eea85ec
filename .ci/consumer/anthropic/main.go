// Command consumer-anthropic is CI's stand-in for a user's module that
// requires only github.com/toolscope/toolscope/providers/anthropic, as
// published.
package main

import (
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolscope/toolscope/providers/anthropic"
)

func main() {
	_ = anthropic.New
	_ = sdk.MessageNewParams{}
	fmt.Println("ok")
}
