import { once } from 'node:events'
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type RunningGateway, startGateway } from '../../src/index.js'

const ANSWER = JSON.stringify({
  id: 'chatcmpl-two',
  object: 'chat.completion',
  created: 0,
  model: 'held-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'late' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
})

/** An upstream that holds every answer until the test releases them: a drain that ends when the test says. */
async function heldUpstream() {
  const held: ServerResponse[] = []
  let arrived = () => {}
  const firstArrived = new Promise<void>((resolve) => {
    arrived = resolve
  })
  const server: Server = createServer((req, res) => {
    req.resume()
    held.push(res)
    arrived()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    firstArrived,
    release() {
      for (const res of held.splice(0)) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER)
      }
    },
    async close() {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  }
}

const config = (upstreamUrl: string) => ({
  providers: { held: { dialect: 'openai', baseURL: `${upstreamUrl}/v1`, apiKeys: ['k'] } },
  models: { m: { fallback: [{ provider: 'held', model: 'held-model' }] } },
  policy: { maxAttempts: 1 },
})

/**
 * Two standalone gateways in one process (an internal and a public config,
 * each on its port), neither with `drainOnSignals: false`, and no handler of
 * the process's own. Each gateway counted the other's listener as "the
 * process handles this signal itself": a SIGTERM drained both and then
 * raised nothing, so a process with any other handle open (a timer, a
 * database pool) never ended; a SIGHUP was taken as the process's own
 * reload by both, drained neither, and — with listeners on it — no longer
 * ended the process either.
 */
describe('two startGateway instances in one process, on one stop signal', () => {
  let gateways: RunningGateway[] = []
  let upstream: Awaited<ReturnType<typeof heldUpstream>> | undefined
  afterEach(async () => {
    upstream?.release()
    await Promise.all(gateways.map((g) => g.close()))
    gateways = []
    await upstream?.close()
    upstream = undefined
  })

  it.each(['SIGTERM', 'SIGHUP'] as const)(
    'both drain, and %s is raised again once, after the last drain ended',
    async (signal) => {
      upstream = await heldUpstream()
      const lines: string[] = []
      const logger = (entry: unknown) => lines.push(JSON.stringify(entry))
      const a = await startGateway({ config: config(upstream.url), port: 0, logger })
      const b = await startGateway({ config: config(upstream.url), port: 0, logger })
      gateways = [a, b]
      // A request in flight on b: its drain ends only when the test releases the answer.
      const answer = fetch(`${b.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      })
      await upstream.firstArrived
      const kill = vi.spyOn(process, 'kill').mockImplementation(() => true)
      try {
        process.emit(signal, signal)
        // a had nothing in flight: its drain ends first. b's is still under way.
        await a.close()
        await new Promise((resolve) => setImmediate(resolve))
        expect(kill.mock.calls).toEqual([])
        upstream.release()
        expect((await answer).status).toBe(200)
        await b.close()
        await new Promise((resolve) => setImmediate(resolve))
        expect(kill.mock.calls).toEqual([[process.pid, signal]])
        // Each drained on the signal (close() above only joined those drains).
        expect(lines.filter((line) => line.includes('"event":"shutdown"'))).toHaveLength(2)
      } finally {
        kill.mockRestore()
      }
    },
  )

  it("a handler of the process's own still keeps the signal: both drain, nothing is raised", async () => {
    upstream = await heldUpstream()
    const a = await startGateway({ config: config(upstream.url), port: 0, logger: () => {} })
    const b = await startGateway({ config: config(upstream.url), port: 0, logger: () => {} })
    gateways = [a, b]
    let mine = 0
    process.once('SIGTERM', () => mine++)
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true)
    try {
      process.emit('SIGTERM', 'SIGTERM')
      await Promise.all([a.close(), b.close()])
      await new Promise((resolve) => setImmediate(resolve))
      expect(mine).toBe(1)
      expect(kill.mock.calls).toEqual([])
    } finally {
      kill.mockRestore()
    }
  })
})
