import { startReplayServer } from '../../../../../test/support/replayServer.js'
import type { ErrorInput } from '../../../src/dialects/ErrorInput.js'

/**
 * Serves one error response from a real loopback server and returns what a
 * client actually receives: the status, fetch's `Headers`, the body text.
 */
export async function errorOver(
  status: number,
  body: string,
  headers: Record<string, string> = {},
): Promise<ErrorInput> {
  const server = await startReplayServer(() => ({
    status,
    headers: { 'content-type': 'application/json', ...headers },
    chunks: body === '' ? [] : [body],
  }))
  try {
    const res = await fetch(server.url, { method: 'POST', body: '{}' })
    return { status: res.status, headers: res.headers, body: await res.text() }
  } finally {
    await server.close()
  }
}
