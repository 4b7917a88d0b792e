import { ManualClock } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { createRedisClient } from '../src/redisClient.js'

// ioredis reports a refused SELECT as an 'error' event and goes on to
// 'ready' on database 0. Refused for a database the server does not have,
// the gateway closes its client (limits local, one error line). Refused
// because Redis is busy running a long script (`BUSY`: SELECT is refused,
// HELLO and AUTH pass), ioredis recovers once the script ends: closing for
// good there shut a valid database's shared limits off until a restart.
let close: (() => void) | undefined
afterEach(() => {
  close?.()
  close = undefined
})

function start() {
  const lines: { level: string; event: string; fields?: Record<string, unknown> | undefined }[] = []
  // Port 9 (discard): nothing listens, so no real SELECT is ever answered.
  const client = createRedisClient(
    { url: 'redis://127.0.0.1:9/1', keyPrefix: 'p', commandTimeoutMs: 250 } as never,
    (level, event, fields) => lines.push({ level, event, fields }),
    new ManualClock(0),
  )
  close = () => client.disconnect()
  const refuse = (message: string) =>
    client.emit(
      'error',
      Object.assign(new Error(message), { command: { name: 'select', args: ['1'] } }),
    )
  return { client, lines, refuse }
}

it('a SELECT refused as BUSY leaves the client to recover, with no error line', () => {
  const { client, lines, refuse } = start()
  refuse('BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.')
  expect(lines.filter((l) => l.level === 'error')).toEqual([])
  expect(client.status).not.toBe('end')
})

it('a SELECT refused for a database out of range closes the client and says so once', async () => {
  const { client, lines, refuse } = start()
  const ended = new Promise((resolve) => client.once('end', resolve))
  refuse('ERR DB index is out of range')
  await ended
  const errors = lines.filter((l) => l.level === 'error')
  expect(errors).toHaveLength(1)
  expect(errors[0]?.fields?.['message']).toContain('ERR DB index is out of range')
  expect(client.status).toBe('end')
})
