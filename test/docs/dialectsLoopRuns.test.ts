import { readFileSync } from 'node:fs'
import type { ChatRequest, StreamEvent } from '@hourglass/llm'
import * as hourglassLlm from '@hourglass/llm'
import { qwenErrors, startFakeProvider } from '@hourglass/testkit'
import ts from 'typescript'
import { afterEach, describe, expect, it } from 'vitest'
import { tsBlocks } from '../support/tsBlocks.js'

// packages/llm/docs/dialects.md opens with a loop over one dialect by hand
// (Qwen's), to show every failure reaching its caller as a NormalizedError:
// "by status, by body, inside an HTTP 200, or as a frame in a stream". Run
// here as written (types stripped) against the qwen fake. Its streamed branch
// checked `res.ok` alone: a throttle Qwen sends as a 200 JSON body went to the
// SSE decoder, which found no frame, and the loop threw "the stream ended
// before the provider finished" — a retryable rate limit read as a cut stream
// (ERNIE's 200-bodied rateLimited and invalidToken the same).

type Complete = (
  request: ChatRequest,
  baseURL: string,
  apiKey: string,
  emit: (event: StreamEvent) => void,
) => Promise<unknown>

function docLoop(): Complete {
  const lines = readFileSync(
    new URL('../../packages/llm/docs/dialects.md', import.meta.url),
    'utf8',
  ).split(/\r?\n/)
  const code = tsBlocks(lines)[0]?.code
  if (code === undefined) throw new Error('docs/dialects.md: no ```ts block')
  const { outputText } = ts.transpileModule(code, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
  })
  const require = (specifier: string): object => {
    if (specifier !== '@hourglass/llm') throw new Error(`docs/dialects.md imports ${specifier}`)
    return hourglassLlm
  }
  return new Function('require', 'exports', `${outputText}\nreturn complete`)(
    require,
    {},
  ) as Complete
}

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

async function qwenFake() {
  const fake = await startFakeProvider({ dialect: 'qwen' })
  closers.push(() => fake.close())
  return fake
}

describe('docs/dialects.md: the loop over one dialect by hand', () => {
  const messages: ChatRequest['messages'] = [{ role: 'user', content: 'hi' }]

  it.each([false, true])(
    'a Qwen throttle in a 200 body is a rate limit (stream: %s)',
    async (stream) => {
      const fake = await qwenFake()
      fake.enqueue(qwenErrors.throttlingIn200())
      const error = await docLoop()(
        { messages, maxTokens: 20, stream },
        fake.baseURL,
        'sk',
        () => {},
      ).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toMatchObject({
        kind: 'rate_limited',
        retryable: true,
        providerCode: 'Throttling.RateQuota',
      })
    },
  )

  it('an ordinary stream still emits its events, ending with finish', async () => {
    const fake = await qwenFake()
    const types: string[] = []
    await docLoop()({ messages, maxTokens: 20, stream: true }, fake.baseURL, 'sk', (e) =>
      types.push(e.type),
    )
    expect(types).toContain('text')
    expect(types.at(-1)).toBe('finish')
  })
})
