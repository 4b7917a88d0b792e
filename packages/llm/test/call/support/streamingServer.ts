import { faultServer } from '@hourglass/testkit'
import { afterEach } from 'vitest'
import { openAICompatible } from '../../../src/adapters/openAICompatible.js'
import type { useFakes } from './fakes.js'

/**
 * One `chat.completion.chunk` SSE event, its choice's `delta` and
 * `finish_reason`: of id `chatcmpl-x` and model `m` unless given.
 */
export const openAIChunk = (
  delta: unknown,
  finish: string | null = null,
  { id = 'chatcmpl-x', model = 'm' }: { id?: string; model?: string } = {},
): string =>
  `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

/**
 * `streaming(body)`: an adapter for an OpenAI-compatible server that answers
 * every request with a 200 streaming `body` as it is (a fault server, closed
 * after each test, as the adapter is by `fakes`).
 */
export function useStreamingServers(fakes: ReturnType<typeof useFakes>) {
  const servers: Array<{ close(): Promise<void> }> = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()))
  })
  return async function streaming(body: string) {
    const server = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body,
    })
    servers.push(server)
    return fakes.adapter(
      openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'm' }),
    )
  }
}
