import { afterEach, describe, expect, it } from 'vitest'
import {
  deepseekErrors,
  doubaoErrors,
  ernieErrors,
  type FakeProvider,
  qwenErrors,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const chat = (base: string, body: Record<string, unknown> = {}) =>
  fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-cn', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: '你好' }], ...body }),
  })

describe('fake DeepSeek', () => {
  it('streams reasoning_content, keep-alive comments, and usage on the finishing chunk', async () => {
    fake = await startFakeProvider({
      dialect: 'deepseek',
      reply: reply.text('答案是四', {
        thinking: '二加二',
        firstTokenDelayMs: 120,
        keepAliveEveryMs: 30,
      }),
    })
    expect(fake.baseURL).toBe(fake.url)
    const stream = await readSse(await chat(fake.baseURL, { stream: true }))
    expect(stream.comments.filter((c) => c.trim() === 'keep-alive').length).toBeGreaterThanOrEqual(
      2,
    )
    const chunks = dataOf<{
      choices: { delta: Record<string, string>; finish_reason: string | null }[]
      usage?: unknown
    }>(stream)
    expect(chunks.map((c) => c.choices[0]!.delta['reasoning_content'] ?? '').join('')).toBe(
      '二加二',
    )
    expect(chunks.map((c) => c.choices[0]!.delta['content'] ?? '').join('')).toBe('答案是四')
    expect(chunks.at(-1)).toMatchObject({
      choices: [{ finish_reason: 'stop' }],
      usage: { completion_tokens: 7 },
    })
  })

  it('names its answers by x-ds-trace-id, as api.deepseek.com does, never x-request-id', async () => {
    // Raw api.deepseek.com answers, JSON and streamed, and a queued request's
    // keep-alive stream: `x-ds-trace-id: <32 hex>`, no `x-request-id`.
    fake = await startFakeProvider({ dialect: 'deepseek' })
    fake.enqueue(reply.text('一'), reply.text('二'), reply.hang({ afterHeaders: true }))
    const whole = await chat(fake.baseURL)
    const streamed = await chat(fake.baseURL, { stream: true })
    const hung = await chat(fake.baseURL, { stream: true })
    for (const res of [whole, streamed, hung]) {
      expect(res.headers.get('x-ds-trace-id')).toMatch(/^[0-9a-f]{32}$/)
      expect(res.headers.get('x-request-id')).toBeNull()
    }
    expect(whole.headers.get('x-ds-trace-id')).not.toBe(streamed.headers.get('x-ds-trace-id'))
    await whole.text()
    await streamed.text()
    await hung.body?.cancel()
  })

  it('answers 402 Insufficient Balance and 503 overloaded, each answer named by a trace id of its own', async () => {
    fake = await startFakeProvider({ dialect: 'deepseek' })
    // One reply object answered twice, and an error of reply.error's.
    const busyReply = deepseekErrors.serverOverloaded()
    fake.enqueue(
      deepseekErrors.insufficientBalance(),
      busyReply,
      busyReply,
      reply.error(429, { error: { message: 'Rate Limit Reached' } }),
    )
    const broke = await chat(fake.baseURL)
    expect(broke.status).toBe(402)
    expect(await broke.json()).toMatchObject({ error: { message: 'Insufficient Balance' } })
    const busy = await chat(fake.baseURL)
    expect(busy.status).toBe(503)
    const busyAgain = await chat(fake.baseURL)
    const limited = await chat(fake.baseURL)
    expect(limited.status).toBe(429)
    await Promise.all([busy.text(), busyAgain.text(), limited.text()])
    // Named as DeepSeek names every answer, refusals included, each its own.
    const traceIds = [broke, busy, busyAgain, limited].map((res) => {
      expect(res.headers.get('x-request-id')).toBeNull()
      return res.headers.get('x-ds-trace-id')
    })
    for (const id of traceIds) expect(id).toMatch(/^[0-9a-f]{32}$/)
    expect(new Set(traceIds).size).toBe(4)
  })
})

describe('fake Qwen / DashScope', () => {
  it('hides a throttling error inside an HTTP 200 body', async () => {
    fake = await startFakeProvider({
      dialect: 'qwen',
      reply: qwenErrors.throttlingIn200('Throttling.AllocationQuota'),
    })
    expect(fake.baseURL).toBe(`${fake.url}/compatible-mode/v1`)
    const res = await chat(fake.baseURL)
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({
      code: 'Throttling.AllocationQuota',
      message: 'Allocated quota exceeded, please increase your quota limit.',
    })
    expect(fake.paidGenerations).toBe(0)
  })

  it('sends event:error with :HTTP_STATUS/429 after a 200 stream began', async () => {
    fake = await startFakeProvider({
      dialect: 'qwen',
      reply: qwenErrors.throttlingInStream({ afterTokens: 3 }),
    })
    const res = await chat(fake.baseURL, { stream: true })
    expect(res.status).toBe(200)
    const stream = await readSse(res)
    expect(stream.raw).toContain(
      '\nevent:error\n:HTTP_STATUS/429\ndata:{"code":"Throttling.RateQuota"',
    )
    const last = stream.events.at(-1)!
    expect(last.event).toBe('error')
    expect(JSON.parse(last.data)).toMatchObject({ code: 'Throttling.RateQuota' })
    expect(stream.comments).toContain('HTTP_STATUS/429')
    const content = dataOf<{ choices?: { delta: { content?: string } }[] }>({
      ...stream,
      events: stream.events.slice(0, -1),
    })
      .map((c) => c.choices?.[0]?.delta.content ?? '')
      .join('')
    expect(content).toBe('通义千')
  })

  it('DataInspectionFailed is a 400 with the native body', async () => {
    fake = await startFakeProvider({ dialect: 'qwen', reply: qwenErrors.dataInspectionFailed() })
    const res = await chat(fake.baseURL)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ code: 'DataInspectionFailed' })
  })

  it('refuses a model the account may not call with 403 AccessDenied.Unpurchased (or AccessDenied) in compatible mode', async () => {
    fake = await startFakeProvider({ dialect: 'qwen' })
    fake.enqueue(
      qwenErrors.modelAccessDenied(),
      qwenErrors.modelAccessDenied('AccessDenied'),
      qwenErrors.modelAccessDenied('Model.AccessDenied'),
    )
    const unpurchased = await chat(fake.baseURL)
    expect(unpurchased.status).toBe(403)
    expect(await unpurchased.json()).toMatchObject({
      error: {
        code: 'AccessDenied.Unpurchased',
        type: 'AccessDenied.Unpurchased',
        message: 'Access to model denied. Please make sure you are eligible for using the model.',
      },
    })
    const denied = await chat(fake.baseURL)
    expect(denied.status).toBe(403)
    expect(await denied.json()).toMatchObject({
      error: { code: 'AccessDenied', message: 'Access denied.' },
    })
    // The key's sub-workspace not granted this model.
    const notGranted = await chat(fake.baseURL)
    expect(notGranted.status).toBe(403)
    expect(await notGranted.json()).toMatchObject({
      error: { code: 'Model.AccessDenied', message: 'Model access denied.' },
    })
    expect(() => qwenErrors.modelAccessDenied('InvalidApiKey' as 'AccessDenied')).toThrow(TypeError)
  })
})

describe('fake Baidu ERNIE', () => {
  const legacy = (base: string, body: Record<string, unknown> = {}) =>
    fetch(`${base}/rpc/2.0/ai_custom/v1/wenxinworkshop/chat/ernie-4.0-8k?access_token=tok-1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: '你好' }], ...body }),
    })

  it('answers the legacy API with result and usage; the key is the access_token', async () => {
    fake = await startFakeProvider({ dialect: 'ernie', reply: reply.text('你好！') })
    expect(await (await legacy(fake.url)).json()).toMatchObject({
      object: 'chat.completion',
      result: '你好！',
      is_truncated: false,
      usage: { completion_tokens: 3 },
    })
    expect(fake.requests[0]).toMatchObject({
      route: 'ernie',
      model: 'ernie-4.0-8k',
      apiKey: 'tok-1',
    })
  })

  it('streams sentence_id / is_end chunks, ending with an empty is_end chunk as the API does', async () => {
    // A real stream's text chunks say `is_end: false`; a chunk of its own
    // ends it: `"sentence_id":3,"is_end":true,…,"result":""` (erniebot4j's
    // logged ernie-bot-8k stream; alibaba/higress's Baidu provider quotes
    // the same). The fake put the last text in the is_end chunk.
    fake = await startFakeProvider({ dialect: 'ernie', reply: reply.text('一二三') })
    const chunks = dataOf<{ sentence_id: number; is_end: boolean; result: string }>(
      await readSse(await legacy(fake.url, { stream: true })),
    )
    expect(chunks.map((c) => [c.sentence_id, c.is_end, c.result])).toEqual([
      [0, false, '一'],
      [1, false, '二'],
      [2, false, '三'],
      [3, true, ''],
    ])
  })

  it('reports RPM limits as HTTP 200 with error_code 336501, and daily limits as 17', async () => {
    fake = await startFakeProvider({ dialect: 'ernie' })
    fake.enqueue(ernieErrors.rateLimited('rpm'), ernieErrors.rateLimited('daily'))
    const rpm = await legacy(fake.url)
    expect(rpm.status).toBe(200)
    expect(await rpm.json()).toMatchObject({
      error_code: 336501,
      error_msg: 'Rate limit reached for RPM',
    })
    expect(await (await legacy(fake.url)).json()).toMatchObject({ error_code: 17 })
  })

  it('v2 refuses unsafe content as 403 unsafe_request and an offline model as 403 access_denied, per its error-code table', async () => {
    fake = await startFakeProvider({ dialect: 'ernie' })
    fake.enqueue(ernieErrors.v2Refused(), ernieErrors.v2Refused('model_offline'))
    const unsafe = await chat(fake.baseURL)
    expect(unsafe.status).toBe(403)
    expect(await unsafe.json()).toEqual({
      error: {
        code: 'system_unsafe',
        message: 'the content of system field is invalid',
        type: 'unsafe_request',
      },
      id: 'as-fakehourglass',
    })
    const offline = await chat(fake.baseURL)
    expect(offline.status).toBe(403)
    expect(await offline.json()).toMatchObject({
      error: { code: 'model_offline', type: 'access_denied' },
    })
    expect(() => ernieErrors.v2Refused('nope' as 'system_unsafe')).toThrow(TypeError)
  })
})

describe('fake Doubao / Ark', () => {
  it('answers chat completions under /api/v3 and rate-limits with RateLimitExceeded.*', async () => {
    fake = await startFakeProvider({ dialect: 'doubao' })
    expect(fake.baseURL).toBe(`${fake.url}/api/v3`)
    expect((await chat(fake.baseURL)).status).toBe(200)
    fake.enqueue(doubaoErrors.rateLimited('EndpointTPMExceeded'), doubaoErrors.accountOverdue())
    const limited = await chat(fake.baseURL)
    expect(limited.status).toBe(429)
    expect(await limited.json()).toMatchObject({
      error: { code: 'RateLimitExceeded.EndpointTPMExceeded', type: 'TooManyRequests' },
    })
    const overdue = await chat(fake.baseURL)
    expect(overdue.status).toBe(403)
    expect(await overdue.json()).toMatchObject({ error: { code: 'AccountOverdueError' } })
  })

  it('pauses one model at the account’s set inference limit with 429 SetLimitExceeded naming it', async () => {
    fake = await startFakeProvider({ dialect: 'doubao' })
    fake.enqueue(doubaoErrors.setLimitExceeded('doubao-seed-1.6'))
    const paused = await chat(fake.baseURL)
    expect(paused.status).toBe(429)
    const { error } = (await paused.json()) as { error: Record<string, string> }
    expect(error).toMatchObject({ code: 'SetLimitExceeded', type: 'TooManyRequests', param: '' })
    expect(error['message']).toContain(
      'has reached the set inference limit for the doubao-seed-1.6 model, and the model service has been paused',
    )
  })

  it('answers 429 QuotaExceeded for a model’s spent free trial, naming it, and for a full queue', async () => {
    fake = await startFakeProvider({ dialect: 'doubao' })
    fake.enqueue(doubaoErrors.quotaExceeded('freeTrial', 'doubao-seed-1.6'))
    fake.enqueue(doubaoErrors.quotaExceeded('queued'))
    for (const words of [
      'Your account [2100000000] has exhausted its free trial quota for the [doubao-seed-1.6] model.',
      'The request has exceeded the quota.',
    ]) {
      const refused = await chat(fake.baseURL)
      expect(refused.status).toBe(429)
      const { error } = (await refused.json()) as { error: Record<string, string> }
      expect(error).toMatchObject({ code: 'QuotaExceeded', type: 'TooManyRequests' })
      expect(error['message']?.startsWith(words)).toBe(true)
    }
    expect(() => doubaoErrors.quotaExceeded('daily' as 'queued')).toThrow(TypeError)
  })

  it('answers 400 OutofContextError for a prompt over the context window', async () => {
    fake = await startFakeProvider({ dialect: 'doubao' })
    fake.enqueue(doubaoErrors.outOfContext())
    const refused = await chat(fake.baseURL)
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({
      error: { code: 'OutofContextError', type: 'BadRequest', param: '' },
    })
  })
})
