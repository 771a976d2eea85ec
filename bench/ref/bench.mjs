// Reference implementation benchmark: @deepseek-ai/dsh-tools measured like
// bench/ measures toolscope (serial trivial call through an agent scope;
// the same with 1 pre-execute listener, 1 guard, 1 post-execute listener and
// 1 result listener; the same with 10,000 global tools).
//
//	node bench.mjs [-d SECONDS]   prints one JSON object on stdout
import { Context } from '@deepseek-ai/cordis'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime, { defineTool } from '@deepseek-ai/dsh-tools'
import { createScope } from '@deepseek-ai/dsh-scope'

const dIdx = process.argv.indexOf('-d')
const seconds = dIdx > 0 ? Number(process.argv[dIdx + 1]) : 1

function trivial(name) {
  return defineTool({
    name,
    description: 'trivial tool',
    parameters: { x: { type: 'string' } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    async execute() { return 'ok' },
    isConcurrencySafe: () => true,
  })
}

let worlds = 0
async function world({ extraTools = 0, full = false } = {}) {
  const ctx = new Context()
  await ctx.plugin(SystemPrompt)
  await ctx.plugin(ToolRuntime)
  ctx.tools.register(trivial('t'))
  for (let i = 0; i < extraTools; i++) ctx.tools.register(trivial(`filler_${String(i).padStart(5, '0')}`))
  const key = `agent${worlds++}`
  // Mint the agent scope from a plugin that injects `tools`, so the scoped
  // context resolves the registry (dsh-scope: resolution follows the minter).
  let agent
  await ctx.plugin({ name: 'bench-agent', inject: ['tools'], apply(c) { agent = createScope(c, key) } })
  if (full) {
    agent.ctx.on('tools/pre-execute', (_exec, next) => next())
    agent.ctx.tools.guard(() => undefined)
    agent.ctx.on('tools/post-execute', (_exec, _res, next) => next())
    agent.ctx.on('tools/result', () => undefined)
  }
  return { ctx, key }
}

function quantile(sorted, q) {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
}

async function measure(name, opts) {
  const { ctx, key } = await world(opts)
  const signal = new AbortController().signal
  let n = 0
  const call = async () => {
    const r = await ctx.tools.execute({ callId: `c${n++}`, name: 't', arguments: { x: 'a' }, signal, agent: key })
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r)}`)
  }
  for (let i = 0; i < 50; i++) await call() // warm up
  const lat = []
  const t0 = process.hrtime.bigint()
  const end = t0 + BigInt(Math.round(seconds * 1e9))
  let now = t0
  while (now < end) {
    const s = process.hrtime.bigint()
    await call()
    now = process.hrtime.bigint()
    lat.push(Number(now - s))
  }
  const elapsed = Number(now - t0)
  lat.sort((a, b) => a - b)
  return {
    name, calls: lat.length, seconds: elapsed / 1e9,
    calls_per_sec: lat.length / (elapsed / 1e9),
    ns_per_call: elapsed / lat.length,
    p50_us: quantile(lat, 0.5) / 1e3, p99_us: quantile(lat, 0.99) / 1e3, p999_us: quantile(lat, 0.999) / 1e3,
  }
}

const scenarios = [
  await measure('ref_execute_bare', {}),
  await measure('ref_execute_full', { full: true }),
  await measure('ref_execute_tools_10k', { extraTools: 9999 }),
]
process.stdout.write(JSON.stringify({ node: process.version, dsh_tools: '0.1.0-rc.8', scenarios }) + '\n')
