import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { callModel, gemini } from '../../src/index.js'
import { rawServer } from './support/rawServer.js'

// Gemini names a model by its resource name: `models/gemini-2.5-flash` (what
// ListModels answers, and what @google/genai takes as it is), or a tuned
// model's `tunedModels/{id}`, reached at its own collection. The adapter put
// any model after `/models/` as one escaped segment, so those names asked for
// `/models/models%2Fgemini-2.5-flash` — which Google's routing decodes to the
// resource `models/models/gemini-2.5-flash`: a 404 NOT_FOUND on every call
// (a tuned model could not be reached at all). The server below routes as
// Google's does: `{model=models/*}` and `{model=tunedModels/*}`, the one
// segment percent-decoded into the name.

const KNOWN = new Set(['models/gemini-2.5-flash', 'tunedModels/support-bot-7x1'])

const open: { close(): void }[] = []
afterEach(() => {
  for (const server of open.splice(0)) server.close()
})

async function googleLike(paths: string[]): Promise<string> {
  const server = await rawServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume()
    req.on('end', () => {
      const url = req.url ?? ''
      paths.push(url)
      const route =
        /^\/v1\/(models|tunedModels)\/([^/:]+):(generateContent|streamGenerateContent)/.exec(url)
      const name =
        route === null ? undefined : `${route[1]}/${decodeURIComponent(route[2] as string)}`
      if (name === undefined || !KNOWN.has(name)) {
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            error: {
              code: 404,
              message: `${name} is not found for API version v1beta, or is not supported for generateContent.`,
              status: 'NOT_FOUND',
            },
          }),
        )
        return
      }
      const answer = {
        candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'resp-1',
      }
      if (route?.[3] === 'streamGenerateContent') {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.end(`data: ${JSON.stringify(answer)}\r\n\r\n`)
      } else {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify(answer))
      }
    })
  })
  open.push(server)
  return server.baseURL
}

async function ask(model: string, stream: boolean): Promise<{ text: string; paths: string[] }> {
  const paths: string[] = []
  const adapter = gemini({ baseURL: await googleLike(paths), apiKey: 'AIzaTest0000', model })
  open.push({ close: () => void adapter.close() })
  const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 8 }
  const options = { models: [adapter], limits: { admission: false as const } }
  const answer = stream
    ? await callModel({ ...options, request: { ...request, stream: true } }).result
    : await callModel({ ...options, request })
  return { text: answer.text, paths }
}

describe.each([false, true])('stream: %s', (stream) => {
  const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent'

  it('asks a model named by its resource name (models/…) at that resource', async () => {
    const { text, paths } = await ask('models/gemini-2.5-flash', stream)
    expect(text).toBe('ok')
    expect(paths).toEqual([`/v1/models/gemini-2.5-flash:${method}`])
  })

  it('asks a tuned model (tunedModels/…) at its own collection', async () => {
    const { text, paths } = await ask('tunedModels/support-bot-7x1', stream)
    expect(text).toBe('ok')
    expect(paths).toEqual([`/v1/tunedModels/support-bot-7x1:${method}`])
  })

  it('still asks a plain model id under models/', async () => {
    const { text, paths } = await ask('gemini-2.5-flash', stream)
    expect(text).toBe('ok')
    expect(paths).toEqual([`/v1/models/gemini-2.5-flash:${method}`])
  })
})
