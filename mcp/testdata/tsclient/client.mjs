// The official MCP TypeScript SDK's client against toolscope-mcp: run by
// TestTypeScriptClient (mcp/tsclient_test.go) as
//
//	node client.mjs stdio <path to toolscope-mcp>
//	node client.mjs http <URL printed by toolscope-mcp -http>
//
// The server runs with -installer. The script fails (exit 1) on the first
// unmet expectation and prints one JSON line with what it saw on success.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args: ["-installer"], stderr: "inherit" })
    : mode === "http"
      ? new StreamableHTTPClientTransport(new URL(target))
      : null;
assert.ok(transport, `usage: node client.mjs stdio|http TARGET (got ${mode})`);

const client = new Client({ name: "toolscope-tsclient", version: "1.0.0" });
let changes = 0;
let onChange = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changes++;
  onChange();
});

const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
// bounded races p against a 10 s timer and clears the timer once p settles,
// so a finished run exits at once instead of waiting the timers out.
const bounded = (p, what) => {
  let timer;
  const timeout = new Promise((_, rej) => {
    timer = setTimeout(() => rej(new Error(`timed out waiting for ${what}`)), 10000);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
};

await bounded(client.connect(transport), "connect");
const seen = { mode, server: client.getServerVersion()?.name };

const names = (await client.listTools()).tools.map((t) => t.name).sort();
for (const want of ["fetch", "git", "install_tool", "lint", "read", "search", "shell", "write"]) {
  assert.ok(names.includes(want), `tools/list lacks ${want}: ${names}`);
}
seen.tools = names;

const ok = await client.callTool({ name: "read", arguments: { path: "/workspace/main.go" } });
assert.equal(ok.isError ?? false, false, `read failed: ${text(ok)}`);
assert.equal(text(ok), "/workspace/main.go: 94 lines");
seen.read = text(ok);

const denied = await client.callTool({ name: "write", arguments: { path: "/etc/passwd", content: "x" } });
assert.equal(denied.isError, true, "a write outside /workspace was not denied");
assert.match(text(denied), /write outside \/workspace refused: \/etc\/passwd/);
seen.denied = text(denied);

const failed = await client.callTool({ name: "lint", arguments: { path: "web/app.min.js" } });
assert.equal(failed.isError, true, "the lint of a .min.js did not fail");
assert.match(text(failed), /index out of range/);
seen.failed = text(failed);

// No elicitation capability here: an approval-requiring call fails closed.
const asked = await client.callTool({ name: "shell", arguments: { cmd: "rm -rf /" } });
assert.equal(asked.isError, true, "rm -rf / ran without approval");
assert.match(text(asked), /destructive command: rm -rf \//);
seen.unapproved = text(asked);

const heard = new Promise((resolve) => (onChange = resolve));
const inst = await client.callTool({ name: "install_tool", arguments: { name: "hello", text: "hi from a new tool" } });
assert.equal(inst.isError ?? false, false, `install_tool failed: ${text(inst)}`);
await bounded(heard, "notifications/tools/list_changed");
const after = (await client.listTools()).tools.map((t) => t.name);
assert.ok(after.includes("hello"), `hello not listed after list_changed: ${after}`);
const hello = await client.callTool({ name: "hello", arguments: {} });
assert.equal(text(hello), "hi from a new tool");
seen.listChanged = changes;
seen.installed = text(hello);

await client.close();
console.log(JSON.stringify(seen));
