// A fake OpenAI provider and, in front of it in the same process, the front
// named in argv[2]: `gateway` (an @hourglass/gateway), `proxy` (the floor any
// gateway must beat: a bare undici pass-through proxy that reads the body,
// forwards it and pipes the answer back) or `direct` (nothing: the provider
// alone). One process per front, each with its own provider, so neither pays
// for the other's garbage; the bench calls each the same way.
import { createServer } from 'node:http'
import { reply, startFakeProvider } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { announceReady } from '../lib/child.js'

const front = process.argv[2]
if (!['direct', 'proxy', 'gateway'].includes(front)) throw new Error(`unknown front ${front}`)
const fake = await startFakeProvider({
  dialect: 'openai',
  reply: reply.text('Hello from the fake provider, answering at once.'),
})
// Loaded only where it runs: the other processes carry none of its code.
const { startGateway } = front === 'gateway' ? await import('@hourglass/gateway') : {}
const running =
  front !== 'gateway'
    ? undefined
    : await startGateway({
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
if (front === 'proxy') await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve))
const urls = {
  direct: () => fake.baseURL,
  gateway: () => `${running.url}/v1`,
  proxy: () => `http://127.0.0.1:${proxy.address().port}${new URL(fake.baseURL).pathname}`,
}
announceReady({ url: urls[front]() })
// The fake keeps every request record; forget them now and then so a long run stays flat.
setInterval(() => fake.reset(), 5000).unref()
