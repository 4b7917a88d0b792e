// One "gateway instance" for the shared-limit tests: its own process, its own
// ioredis client, an HTTP front that admits each request through llm's one
// admission layer (Admission + ProviderLimits, as the gateway wires them) and
// forwards the admitted ones to the counting upstream.
// Spawned by the test with plain `node`: it runs the built packages (npm test
// builds first), as a deployed gateway would — a child that transpiled the
// TypeScript sources on load spent seconds of CPU doing so.
import { createServer } from 'node:http'
import { Deadline } from '@hourglass/core'
import { Admission, isRateLimited, ProviderLimits } from '@hourglass/llm'
import { Redis } from 'ioredis'

const send = (message) => process.send?.(message)

const redis = new Redis(String(process.env.REDIS_URL), {
  // Reconnect quickly in the test; the limiter fails over while disconnected.
  retryStrategy: () => 50,
  maxRetriesPerRequest: 0,
})
redis.on('error', () => {})
redis.on('ready', () => send({ type: 'redis-ready' }))

const limits = new ProviderLimits({
  limits: { acme: { rpm: Number(process.env.RPM) }, other: { rpm: 1000 } },
  redis,
  keyPrefix: String(process.env.KEY_PREFIX),
  instances: Number(process.env.INSTANCES ?? 1),
  logger: { warn: (message) => send({ type: 'log', message }) },
})
const admission = new Admission({ limits })

const upstream = String(process.env.UPSTREAM_URL)

const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://x')
  const provider = url.searchParams.get('provider') ?? 'acme'
  const deadline = Deadline.after(2000)
  try {
    try {
      // Never queue here: a spent window is a 429 at once.
      const permit = await admission.acquire({ provider, tokens: 1, deadline, maxWaitMs: 0 })
      permit.release()
    } catch (error) {
      if (!isRateLimited(error)) throw error
      res.writeHead(429, { 'retry-after': String(Math.ceil(error.retryAfterMs / 1000)) })
      res.end(JSON.stringify({ limited: error.limit, degraded: limits.degraded }))
      return
    }
    const answer = await fetch(`${upstream}?id=${url.searchParams.get('id')}`, {
      signal: deadline.signal,
    })
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ upstream: answer.status, degraded: limits.degraded }))
  } catch (error) {
    res.writeHead(500)
    res.end(String(error))
  } finally {
    deadline.dispose()
  }
})
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  send({ type: 'listening', port: typeof address === 'object' && address ? address.port : 0 })
})

process.on('message', (message) => {
  if (message === 'stop') {
    server.closeAllConnections()
    server.close()
    redis.disconnect()
    // The IPC channel alone would keep this process alive.
    process.disconnect()
  }
})
