module github.com/toolscope/toolscope/cluster

go 1.26.0

require (
	github.com/toolscope/toolscope v0.0.0-00010101000000-000000000000
	google.golang.org/protobuf v1.36.12
)

replace github.com/toolscope/toolscope => ../
