#!/usr/bin/env bash
# consumer.sh builds a throwaway module that requires toolscope (replaced by
# this checkout) next to the model and MCP SDKs, tidied the way a user's
# module would be (issue 12, item 10). It fails when toolscope's go.mod lets
# protoactor pin an OpenTelemetry SDK older than the API those SDKs bring.
# Usage: bash .ci/consumer.sh [TOOLSCOPE_DIR]
set -euo pipefail
root="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$here/consumer/main.go" "$tmp/"
cd "$tmp"
export GOFLAGS=-mod=mod
go mod init example.com/toolscope-consumer >/dev/null 2>&1
go mod edit -require=github.com/toolscope/toolscope@v0.0.0 -replace="github.com/toolscope/toolscope=$root"
go get github.com/openai/openai-go/v3@v3.98.0 github.com/anthropics/anthropic-sdk-go/v2@v2.15.0 \
	github.com/modelcontextprotocol/go-sdk@v1.8.0 google.golang.org/genai@v1.77.0 >/dev/null 2>&1
go mod tidy >/dev/null 2>&1
go build -o /dev/null .
echo "    consumer module builds with $(go list -m go.opentelemetry.io/otel/sdk/metric)"
