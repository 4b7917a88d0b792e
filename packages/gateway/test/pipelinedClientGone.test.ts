import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { connect } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { type LogRecord, type RunningGateway, startGateway } from '../src/index.js'

/**
 * HTTP/1.1 pipelining: a client writes several requests before reading any
 * answer. Node runs the handler of each at once, but only the answer at the
 * head of the queue has the socket; the ones behind it are never told when
 * the connection dies. A client that pipelines and leaves must not go on
 * paying for its queued calls.
 */
describe('pipelined requests whose client leaves', () => {
  let upstream: Server | undefined
  let running: RunningGateway | undefined
  afterEach(async () => {
    await running?.close()
    upstream?.closeAllConnections()
    await new Promise((resolve) => upstream?.close(resolve))
    running = undefined
    upstream = undefined
  })

  it('stops every queued call upstream, logs each as 499 and leaves nothing for the drain', async () => {
    const COUNT = 5
    let arrived = 0
    let abandoned = 0
    let allArrived: () => void = () => {}
    let allAbandoned: () => void = () => {}
    const arrivedAll = new Promise<void>((resolve) => {
      allArrived = resolve
    })
    const abandonedAll = new Promise<void>((resolve) => {
      allAbandoned = resolve
    })
    // A provider that never answers: only the gateway giving up ends a call.
    upstream = createServer((req, res) => {
      req.resume()
      res.once('close', () => {
        if (++abandoned === COUNT) allAbandoned()
      })
      if (++arrived === COUNT) allArrived()
    })
    upstream.listen(0, '127.0.0.1')
    await once(upstream, 'listening')
    const { port: upstreamPort } = upstream.address() as { port: number }
    const logs: LogRecord[] = []
    running = await startGateway({
      config: {
        providers: {
          p: { dialect: 'openai', baseURL: `http://127.0.0.1:${upstreamPort}/v1`, apiKeys: ['k'] },
        },
        models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
      },
      port: 0,
      logger: (record) => logs.push(record),
      drainTimeoutMs: 500,
    })
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
    const one =
      'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\ncontent-type: application/json\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    const socket = connect(Number(new URL(running.url).port), '127.0.0.1')
    socket.on('error', () => {})
    await once(socket, 'connect')
    socket.write(one.repeat(COUNT))
    await arrivedAll
    socket.destroy()
    // A bound, not a synchronisation: the calls end as soon as they are
    // stopped; left running (the provider never answers), they would not.
    await Promise.race([abandonedAll, delay(3000)])
    expect(abandoned, 'upstream calls stopped after the client left').toBe(COUNT)

    await running.close()
    const lines = logs.filter((r) => r['event'] === 'request')
    expect(lines.map((r) => [r['status'], r['error']])).toEqual(
      Array.from({ length: COUNT }, () => [499, 'client_closed']),
    )
    const shutdown = logs.find((r) => r['event'] === 'shutdown')
    expect(shutdown?.['inFlight'], 'requests the drain still waited for').toBe(0)
  }, 8000)
})
