import { describe, expect, it } from 'vitest'
import { createGateway } from '../src/createGateway.js'

const config = {
  providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
  models: { small: { fallback: [{ provider: 'p', model: 'gpt-x' }] } },
}

// An object with `child()` passed for pino; the gateway calls `isLevelEnabled`
// for every line and on close: requests were answered with every line lost,
// and `close()` (the drain SIGTERM runs) rejected with a raw TypeError.
describe('a logger object that is not pino', () => {
  it('is refused by createGateway, naming the option, not accepted and then thrown from close()', async () => {
    // bunyan-, log4js- or hand-made: `child()` and the level methods, no `isLevelEnabled`.
    const notPino = {
      info() {},
      warn() {},
      error() {},
      debug() {},
      child() {
        return this
      },
    }
    let gateway: ReturnType<typeof createGateway> | undefined
    try {
      expect(() => {
        gateway = createGateway(config as never, { logger: notPino as never })
      }).toThrow(
        'createGateway: logger must be a pino logger or a function receiving each record, got an object',
      )
    } finally {
      await gateway?.close().catch(() => {})
    }
  })
})
