// Command consumer-cluster is CI's stand-in for a user's module that
// requires only github.com/toolscope/toolscope/cluster, as published: the
// root module must come in through cluster's own go.mod requirement.
package main

import (
	"fmt"

	"github.com/toolscope/toolscope/cluster"
)

func main() {
	cat := cluster.NewCatalog()
	_ = cat
	_ = cluster.Kind
	_ = cluster.NewClient
	_ = cluster.NewMemoryStore()
	_ = cluster.StartEmbedded
	fmt.Println("ok")
}
