import { createHook } from 'node:async_hooks'
import { type AddressInfo, createServer, type Server } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRouter } from '../src/index.js'

/**
 * `close()` of a gateway whose Redis had gone away left ioredis's disconnect
 * timer behind: ioredis ends the socket and arms a timer (2 s by default)
 * that only the socket's close clears — and a socket closed already, the
 * client waiting to reconnect, never closes again. A process whose gateway
 * was closed stayed alive 2 s more. The timers `close()` arms must all have
 * run (or been cleared) by the time a 1 ms timer set after it has.
 */

interface TimerLike {
  hasRef(): boolean
  _destroyed?: boolean
  /** Its delay in ms: what a failure shows. */
  _idleTimeout?: number
}

describe('close() with Redis gone', () => {
  let gateway: GatewayRouter | undefined
  let server: Server | undefined
  afterEach(async () => {
    await gateway?.close()
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
    gateway = undefined
    server = undefined
  })

  it('leaves no timer holding the process', async () => {
    // A "Redis" that drops every connection at once: the client reconnects,
    // each time after a longer pause (50, 100, 150, … ms), its socket closed.
    let connections = 0
    let fourth: () => void = () => {}
    const dropped = new Promise<void>((resolve) => {
      fourth = resolve
    })
    server = createServer((socket) => {
      connections++
      socket.destroy()
      if (connections === 4) fourth()
    })
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    gateway = createGateway(
      {
        providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
        models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
        redis: { url: `redis://127.0.0.1:${port}` },
      },
      { logger: () => {} },
    )
    await dropped
    // Two check phases, so a poll phase in between has delivered the close
    // to the client: it now waits 200 ms to reconnect, its socket closed.
    for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve))

    const armed: TimerLike[] = []
    const hook = createHook({
      init(_id, type, _trigger, resource) {
        if (type === 'Timeout') armed.push(resource as TimerLike)
      },
    }).enable()
    try {
      await gateway.close()
    } finally {
      hook.disable()
    }
    // Set after close(): every timer it armed for 1 ms or less has run first.
    await new Promise((resolve) => setTimeout(resolve, 1))
    const holding = armed.filter((timer) => timer._destroyed !== true && timer.hasRef())
    expect(holding.map((timer) => timer._idleTimeout)).toEqual([])
  })
})
