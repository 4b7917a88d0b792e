import { closedPort } from '@hourglass/testkit'
import { Agent, type buildConnector, interceptors, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, deadlineInterceptor } from '../src/index.js'
import { rejection } from './helpers.js'

// undici's retry interceptor picks the errors it retries by `code`. Through
// createConnector a refused connect is a ConnectError (`CONNECT_FAILED`,
// `osCode: 'ECONNREFUSED'`), a code its defaults do not list: as the README
// says, it is retried there only when the code is listed.

const DEFAULT_CODES = [
  'ECONNRESET',
  'ECONNREFUSED',
  'ENOTFOUND',
  'ENETDOWN',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EHOSTUNREACH',
  'EPIPE',
  'UND_ERR_SOCKET',
]

let agents: Agent[] = []
afterEach(async () => {
  await Promise.all(agents.map((agent) => agent.destroy()))
  agents = []
})

/** An Agent over createConnector, counting its connects. */
function counting(): { agent: Agent; connects: () => number } {
  let connects = 0
  const connector = createConnector()
  const counted: buildConnector.connector = (options, callback) => {
    connects++
    connector(options, callback)
  }
  const agent = new Agent({ connect: counted })
  agents.push(agent)
  return { agent, connects: () => connects }
}

it.each([
  ['its defaults: not retried', DEFAULT_CODES, 1],
  ['CONNECT_FAILED listed: retried up to maxRetries', [...DEFAULT_CODES, 'CONNECT_FAILED'], 3],
])(
  'a refused connect under interceptors.retry beneath deadlineInterceptor, %s',
  async (_, errorCodes, expected) => {
    const port = await closedPort()
    const { agent, connects } = counting()
    const dispatcher = agent.compose(
      interceptors.retry({ maxRetries: 2, minTimeout: 1, timeoutFactor: 1, errorCodes }),
      deadlineInterceptor({ retry: false }),
    )
    const error = await rejection(request(`http://127.0.0.1:${port}/`, { dispatcher }))
    expect(error).toMatchObject({ code: 'CONNECT_FAILED', osCode: 'ECONNREFUSED' })
    expect(connects()).toBe(expected)
  },
)
