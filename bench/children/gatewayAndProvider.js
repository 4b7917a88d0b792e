// A fake OpenAI provider, an @hourglass/gateway in front of it, and the floor
// any gateway must beat: a bare undici pass-through proxy (read the body,
// forward it, pipe the answer back) — in one process of their own: the bench
// calls each the same way.
import { createServer } from 'node:http'
import { startGateway } from '@hourglass/gateway'
import { reply, startFakeProvider } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { announceReady } from '../lib/child.js'

const fake = await startFakeProvider({
  dialect: 'openai',
  reply: reply.text('Hello from the fake provider, answering at once.'),
})
const running = await startGateway({
  port: 0,
  // Discarded: the bench measures the gateway's work, not a terminal's.
  logger: () => {},
  config: {
    providers: { fake: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['sk-test'] } },
    models: { 'gpt-4o-mini': { fallback: [{ provider: 'fake', model: 'gpt-4o-mini' }] } },
  },
})
const origin = new URL(fake.baseURL).origin
const upstream = new Agent({ connections: 64 })
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'host',
])
const proxy = createServer(async (req, res) => {
  try {
    const chunks = []
    for await (const chunk of req) chunks.push(chunk)
    const headers = {}
    for (const [name, value] of Object.entries(req.headers)) {
      if (!HOP_BY_HOP.has(name)) headers[name] = value
    }
    const answer = await request(`${origin}${req.url}`, {
      method: req.method,
      headers,
      body: Buffer.concat(chunks),
      dispatcher: upstream,
    })
    const out = {}
    for (const [name, value] of Object.entries(answer.headers)) {
      if (!HOP_BY_HOP.has(name)) out[name] = value
    }
    res.writeHead(answer.statusCode, out)
    for await (const chunk of answer.body) res.write(chunk)
    res.end()
  } catch {
    res.destroy()
  }
})
proxy.keepAliveTimeout = 60_000
await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve))
announceReady({
  direct: fake.baseURL,
  gateway: `${running.url}/v1`,
  proxy: `http://127.0.0.1:${proxy.address().port}${new URL(fake.baseURL).pathname}`,
})
// The fake keeps every request record; forget them now and then so a long run stays flat.
setInterval(() => fake.reset(), 5000).unref()
