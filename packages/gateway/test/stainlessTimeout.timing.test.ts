import { setTimeout as delay } from 'node:timers/promises'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import OpenAI, { APIError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { watchLoopStalls } from '../../../test/support/loopStalls.js'
import { type Harness, startHarness } from './support/harness.js'

const ANSWER = JSON.stringify({
  id: 'chatcmpl-slow',
  object: 'chat.completion',
  created: 0,
  model: 'slow-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'late' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
})

/**
 * The control: a plain timer due `ms` after `from` (performance.now scale),
 * and from when it fired, how long this process was kept from running
 * (`watchLoopStalls`) until `stalledMs()` is read, once the stop was seen.
 * Stopping the call takes a timer and then two loopback messages (the
 * client's FIN to the gateway, the gateway's to the upstream): a loaded box
 * that deschedules this process for 300 ms between the two is missed by the
 * timer alone (seen: a stop 676 ms after the timeout against a timer 353 ms
 * late), not by this.
 */
function controlDue(from: number, ms: number): { firedAt: Promise<number>; stalledMs(): number } {
  let stalls: { stop(): number } | undefined
  const firedAt = new Promise<number>((resolve) =>
    setTimeout(
      () => {
        stalls = watchLoopStalls()
        resolve(performance.now())
      },
      Math.max(0, from + ms - performance.now()),
    ),
  )
  // Not fired yet (the stop came first): nothing to allow for.
  return { firedAt, stalledMs: () => stalls?.stop() ?? 0 }
}

/**
 * The official openai client sends its per-attempt timeout as
 * `X-Stainless-Timeout` (whole seconds, truncated: `timeout: 1000` is `1`,
 * read as the most it can be, 1999 ms, so the gateway never gives up first).
 * The gateway's deadline for the request is no longer than that, and the
 * client's hang-up ends it sooner, so the upstream generation stops when the client gives
 * up — measured on the upstream's socket (faultServer records when its client
 * went away), against a plain timer due at the client's timeout and how long the
 * event loop was held up after it (`controlDue`), which measure how late
 * this machine runs right now. Without the header,
 * the client's hang-up does the same.
 */
describe('the client’s deadline is the gateway’s', () => {
  let upstream: FaultServer | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await upstream?.close()
    harness = undefined
    upstream = undefined
  })

  async function slowProvider(options: { trustStainlessTimeout?: boolean } = {}) {
    // Request 0 answers at once (a warm-up); every later one would take 5 s.
    upstream = await faultServer((_req, i) => ({
      type: 'respond',
      delayMs: i === 0 ? 0 : 5000,
      headers: { 'content-type': 'application/json' },
      body: ANSWER,
    }))
    harness = await startHarness(
      {
        providers: { slow: { dialect: 'openai', baseURL: `${upstream.url}/v1`, apiKeys: ['k'] } },
        models: { m: { fallback: [{ provider: 'slow', model: 'slow-model' }] } },
        policy: { maxAttempts: 1 },
      },
      { drainTimeoutMs: 0, ...options },
    )
    return upstream
  }

  // openai-node 6.x sends X-Stainless-Timeout only for a per-request `timeout`
  // (it builds the header before the client's default is applied): with the
  // timeout on the client, the gateway learns of it when the client hangs up.
  const cases = [
    { timeoutOn: 'request', stream: false },
    { timeoutOn: 'request', stream: true },
    { timeoutOn: 'client', stream: false },
    { timeoutOn: 'client', stream: true },
  ] as const
  // The four calls are in flight together, so the suite waits for one client
  // timeout instead of four; each starts this long after the one before, so
  // no two hang-ups (and their stops) fall on the same moment.
  const STAGGER_MS = 150

  it("openai client, timeout 1000 on the request or on the client, streamed or not, provider taking 5 s: each upstream call stops within 50 ms of the client's timeout", async () => {
    const up = await slowProvider()
    const clients = {
      request: new OpenAI({ baseURL: `${harness!.url}/v1`, apiKey: 'x', maxRetries: 0 }),
      client: new OpenAI({
        baseURL: `${harness!.url}/v1`,
        apiKey: 'x',
        maxRetries: 0,
        timeout: 1000,
      }),
    }
    // Warm up the whole path (the SDK, the gateway, its upstream connection), and once the path
    // of a request given up on, streamed and not: a first call loads and connects lazily, and the
    // first abort of a process runs cold code (tens of ms under vitest) — not what a running
    // gateway does.
    await clients.request.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'warm' }],
    })
    let next = 1 // the upstream's index of the next request: 0 was the warm-up
    for (const stream of [false, true]) {
      const warmAbort = new AbortController()
      const warm = clients.request.chat.completions
        .create(
          {
            model: 'm',
            messages: [{ role: 'user', content: 'warm' }],
            ...(stream ? { stream: true as const } : {}),
          },
          { signal: warmAbort.signal },
        )
        .catch(() => undefined)
      await up.request(next)
      warmAbort.abort()
      await warm
      await up.clientGone(next++)
    }

    const measured: Promise<void>[] = []
    const firstAt = performance.now()
    for (const [k, { timeoutOn, stream }] of cases.entries()) {
      const label = `timeout on the ${timeoutOn}${stream ? ', stream' : ''}`
      const requestId = `${timeoutOn}${stream ? '-stream' : ''}`
      await delay(Math.max(0, firstAt + k * STAGGER_MS - performance.now()))
      const index = next++
      const startedAt = performance.now()
      const control = controlDue(startedAt, 1000)
      const call = clients[timeoutOn].chat.completions.create(
        {
          model: 'm',
          messages: [{ role: 'user', content: 'take your time' }],
          ...(stream ? { stream: true as const } : {}),
        },
        {
          headers: { 'x-request-id': requestId },
          ...(timeoutOn === 'request' ? { timeout: 1000 } : {}),
        },
      )
      const error = call.then(
        () => undefined,
        (e: unknown) => e,
      )
      // Arrived upstream before the next call starts: record `index` is this call's.
      await up.request(index)
      const measuring = (async () => {
        const failure = await error
        const gone = await up.clientGone(index)
        const timerFiredAt = await control.firedAt
        const stalledMs = control.stalledMs()
        const dueAt = startedAt + 1000
        const stopMs = (gone.clientGoneAt ?? Number.NaN) - dueAt
        const latenessMs = timerFiredAt - dueAt
        const got =
          failure instanceof APIError
            ? (failure.status ?? failure.constructor.name)
            : String(failure)
        const requestLine = () =>
          harness!.logs.filter((l) => l.event === 'request' && l['requestId'] === requestId)
        await expect.poll(() => requestLine().length, { message: label }).toBe(1)
        const line = requestLine()[0]
        const sentMs = Number(up.records[index]?.headers['x-deadline-remaining-ms'])
        console.info(
          `${label}: upstream stopped ${stopMs.toFixed(1)} ms after the client's timeout was due (a plain timer due then fired ${latenessMs.toFixed(1)} ms late, and the event loop was then held up ${stalledMs.toFixed(1)} ms at most); the client got ${got}, the gateway logged ${line?.['status']} ${line?.['error']}; deadline sent upstream ${sentMs} ms`,
        )
        expect(gone.workingWhenClientLeft, label).toBe(true)
        // Unstopped, the upstream would run its 5 s: stopMs ≈ 4000.
        expect(stopMs, label).toBeLessThanOrEqual(50 + Math.max(0, latenessMs) + stalledMs)
        if (timeoutOn === 'request') {
          // The header said `1` (the SDK truncates 1000 ms to whole seconds), read as the most the
          // client's timer can be, 1999 ms: the gateway's bound never fires before the client's
          // timer, whose hang-up stopped the call — the client got its own timeout, not a 504.
          // A stream is told the request's whole deadline: once it has started, the SDK reads it
          // to its end (its timer stops at the headers); only the wait for its first token is cut.
          if (stream) expect(sentMs, label).toBeGreaterThan(55_000)
          else expect(sentMs, label).toBeLessThanOrEqual(1999)
          expect(stopMs, label).toBeGreaterThan(-250)
          expect(failure, label).toBeInstanceOf(APIError)
          expect((failure as APIError).status, label).toBeUndefined()
          expect(line, label).toMatchObject({ status: 499, error: 'client_closed' })
        } else {
          // No header: the client's hang-up stopped it, logged as such.
          expect(sentMs, label).toBeGreaterThan(55_000)
          expect(failure, label).toBeInstanceOf(APIError)
          expect(line, label).toMatchObject({ status: 499, error: 'client_closed' })
        }
      })()
      // Awaited below, after the later calls have started: marked handled meanwhile.
      measuring.catch(() => {})
      measured.push(measuring)
    }
    await Promise.all(measured)
  })

  it('the deadline sent upstream is within the client timeout; the SDK default (600 s) never lengthens the configured one', async () => {
    const up = await slowProvider()
    // The two requests whose deadline is a minute are let go once checked.
    const done = new AbortController()
    const post = (headers: Record<string, string>) =>
      fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
        signal: AbortSignal.any([done.signal, AbortSignal.timeout(3000)]),
      }).then(
        (r) => r.status,
        () => 'aborted',
      )
    const sent = (i: number) => Number(up.records[i + 1]?.headers['x-deadline-remaining-ms'])
    expect(await post({})).toBe(200) // request 0: the fast one
    expect(await post({ 'x-stainless-timeout': '0.3' })).toBe(504)
    expect(sent(0)).toBeLessThanOrEqual(300)
    expect(sent(0)).toBeGreaterThan(50)
    // The smallest trusted source wins.
    expect(await post({ 'x-stainless-timeout': '2', 'x-deadline-remaining-ms': '300' })).toBe(504)
    expect(sent(1)).toBeLessThanOrEqual(300)
    // 600 s from the SDK: the request keeps deadline.defaultMs (60 s), no more.
    const third = post({ 'x-stainless-timeout': '600' })
    await up.request(3)
    expect(sent(2)).toBeLessThanOrEqual(60_000)
    expect(sent(2)).toBeGreaterThan(55_000)
    // 0 is a truncated sub-second timeout (openai-node sends Math.trunc(ms / 1000)): ignored.
    const fourth = post({ 'x-stainless-timeout': '0' })
    await up.request(4)
    expect(sent(3)).toBeGreaterThan(55_000)
    done.abort()
    expect(await third).toBe('aborted')
    expect(await fourth).toBe('aborted')
  })

  it('trustStainlessTimeout: false ignores it', async () => {
    const up = await slowProvider({ trustStainlessTimeout: false })
    const controller = new AbortController()
    const call = fetch(`${harness!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-stainless-timeout': '1' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
      signal: controller.signal,
    }).catch(() => undefined)
    await up.request(0)
    expect(Number(up.records[0]?.headers['x-deadline-remaining-ms'])).toBeGreaterThan(55_000)
    expect(up.records[0]?.headers['x-stainless-timeout']).toBeUndefined()
    controller.abort()
    await call
  })
})
