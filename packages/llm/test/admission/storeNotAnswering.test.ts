import diagnostics from 'node:diagnostics_channel'
import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import {
  openAIErrors,
  type RedisServer,
  redisAvailable,
  reply,
  startRedis,
} from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import {
  RedisCooldownStore,
  type RedisScriptClient,
} from '../../src/admission/RedisCooldownStore.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmAttemptMessage, llmChannels } from '../../src/channels.js'
import { defaultRetryBudgets } from '../../src/retry/defaultRetryBudgets.js'
import { useFakes, user } from '../call/support/fakes.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the store-not-answering tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
}

/**
 * ioredis with its defaults — an offline queue and resends on reconnect —
 * holds every command while Redis is down: the store never answers. The
 * docs ask for a fail-fast client; a call that did not get one must still
 * end at its deadline, and at its cancel, not when Redis comes back.
 */
describe.skipIf(!available)(
  'a Redis that does not answer (down behind a queueing client, or paused): cooldowns and RPM/TPM counters',
  () => {
    const fakes = useFakes()
    let redis: RedisServer
    const clients: Redis[] = []

    beforeAll(async () => {
      redis = await startRedis()
    })
    afterAll(async () => {
      await redis?.stop()
    })
    afterEach(async () => {
      for (const client of clients.splice(0)) client.disconnect()
      if (redis) await redis.restart().catch(() => {})
    })

    /** A default ioredis client, and a hook that resolves when a command of `kind` is sent. */
    async function defaultClient() {
      const c = new Redis(redis.url)
      c.on('error', () => {})
      clients.push(c)
      await c.ping()
      const sent: Array<{ op: string; resolve: () => void }> = []
      const client: RedisScriptClient = {
        evalsha: (sha, n, ...args) => {
          const op = String(args[n])
          for (const s of sent.filter((s) => s.op === op)) s.resolve()
          return c.evalsha(sha, n, ...args)
        },
        eval: (script, n, ...args) => c.eval(script, n, ...args),
      }
      const commandSent = (op: 'read' | 'extend') =>
        new Promise<void>((resolve) => sent.push({ op, resolve }))
      return { client, commandSent }
    }

    it('a call waiting on the store for its cooldowns ends at its deadline, nothing sent', async () => {
      const fake = await fakes.start()
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }),
      )
      const { client, commandSent } = await defaultClient()
      const clock = new ManualClock()
      const admission = new Admission({ store: new RedisCooldownStore(client), clock })
      await redis.kill()
      using deadline = Deadline.after(1000, { clock })
      const reading = commandSent('read')
      const call = callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 5 },
        deadline,
        limits: { admission },
      })
      await reading
      clock.advance(1000)
      const error = await call.catch((e: unknown) => e)
      expect(isDeadlineExceeded(error)).toBe(true)
      expect(fake.requests).toHaveLength(0)
    })

    it("a stream waiting on the store ends at its cancel, with the cancel's reason", async () => {
      const fake = await fakes.start()
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }),
      )
      const { client, commandSent } = await defaultClient()
      const admission = new Admission({ store: new RedisCooldownStore(client) })
      await redis.kill()
      using deadline = Deadline.after(60_000)
      const reading = commandSent('read')
      const stream = callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 5, stream: true },
        deadline,
        limits: { admission },
      })
      await reading
      const reason = new Error('the user left')
      stream.cancel(reason)
      await expect(stream.result).rejects.toBe(reason)
      expect(fake.requests).toHaveLength(0)
    })

    it('a 429 whose cooldown cannot be written to the store still ends the call at its deadline', async () => {
      const fake = await fakes.start()
      // Redis goes away while the request is at the provider, which answers 429.
      fake.enqueue(async () => {
        await redis.kill()
        return openAIErrors.rateLimited({ retryAfterS: 1 })
      }, reply.text('late'))
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }),
      )
      const { client, commandSent } = await defaultClient()
      const clock = new ManualClock()
      const admission = new Admission({ store: new RedisCooldownStore(client), clock })
      using deadline = Deadline.after(10_000, { clock })
      const extending = commandSent('extend')
      const call = callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 5 },
        deadline,
        limits: { admission },
      })
      await extending
      clock.advance(10_000)
      const error = await call.catch((e: unknown) => e)
      expect(isDeadlineExceeded(error)).toBe(true)
      expect(fake.requests).toHaveLength(1)
    })

    describe('the 429 answered before the cooldown write hung is still an attempt: recorded once, with what the provider said', () => {
      const published: LlmAttemptMessage[] = []
      const onPublished = (message: unknown) => published.push(message as LlmAttemptMessage)
      beforeAll(() => diagnostics.subscribe(llmChannels.attempt.name, onPublished))
      afterAll(() => diagnostics.unsubscribe(llmChannels.attempt.name, onPublished))
      afterEach(() => {
        published.length = 0
      })

      /**
       * A call whose one request is answered 429 while Redis goes away: the
       * cooldown's write is then held by the client's offline queue. Resolves
       * once that write was sent, with the call still waiting on it.
       */
      async function heldOnTheWrite(stream: boolean, signal?: AbortSignal) {
        const fake = await fakes.start()
        fake.enqueue(async () => {
          await redis.kill()
          return openAIErrors.rateLimited({ retryAfterS: 1 })
        }, reply.text('late'))
        const model = fakes.adapter(
          openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm', name: 'held' }),
        )
        const { client, commandSent } = await defaultClient()
        const clock = new ManualClock()
        const admission = new Admission({ store: new RedisCooldownStore(client), clock })
        const deadline = Deadline.after(10_000, { clock })
        const records: AttemptRecord[] = []
        const extending = commandSent('extend')
        const options = {
          models: [model],
          deadline,
          signal,
          limits: { admission },
          onAttempt: (r: AttemptRecord) => records.push(r),
        }
        const messages = [user('hi')]
        const call = stream
          ? callModel({ ...options, request: { messages, maxTokens: 5, stream: true } })
          : undefined
        const ended = (
          call?.result ?? callModel({ ...options, request: { messages, maxTokens: 5 } })
        ).catch((e: unknown) => e)
        await extending
        return { fake, model, clock, deadline, records, ended, cancel: call?.cancel }
      }

      const expectOneRecordOfThe429 = (
        records: AttemptRecord[],
        kind: string,
        model: ModelAdapter,
      ) => {
        expect(records).toHaveLength(1)
        expect(records[0]).toMatchObject({
          attempt: 1,
          provider: 'held',
          status: 429,
          errorClass: 'ProviderError',
          errorKind: 'rate_limited',
          decision: 'fail',
        })
        expect(records[0]?.reason).toContain(kind)
        expect(published.map((m) => [m.status, m.errorKind, m.decision])).toEqual([
          [429, 'rate_limited', 'fail'],
        ])
        // The provider's failure counts against its retry budget too.
        expect(defaultRetryBudgets().forProvider(model).tokens).toBe(9)
      }

      it('ended by the deadline', async () => {
        const { fake, model, clock, deadline, records, ended } = await heldOnTheWrite(false)
        expect(records).toHaveLength(0) // still writing the cooldown
        clock.advance(10_000)
        expect(isDeadlineExceeded(await ended)).toBe(true)
        expect(fake.requests).toHaveLength(1)
        expectOneRecordOfThe429(records, 'deadline_exceeded', model)
        deadline.dispose()
      })

      it("ended by the caller's signal", async () => {
        const controller = new AbortController()
        const { model, records, ended, deadline } = await heldOnTheWrite(false, controller.signal)
        const reason = new Error('the caller left')
        controller.abort(reason)
        expect(await ended).toBe(reason)
        expectOneRecordOfThe429(records, 'aborted', model)
        deadline.dispose()
      })

      it('a stream ended by its cancel', async () => {
        const { model, records, ended, cancel, deadline } = await heldOnTheWrite(true)
        const reason = new Error('the user left')
        cancel?.(reason)
        expect(await ended).toBe(reason)
        expectOneRecordOfThe429(records, 'aborted', model)
        deadline.dispose()
      })
    })

    it('a call waiting on shared RPM/TPM counters in a paused Redis ends at its deadline', async () => {
      const fake = await fakes.start()
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }),
      )
      const counters = new Redis(redis.url)
      counters.on('error', () => {})
      const admin = new Redis(redis.url)
      clients.push(counters, admin)
      await counters.ping()
      const admission = new Admission({
        limits: new ProviderLimits({ limits: { openai: { rpm: 100 } }, redis: counters }),
      })
      // Redis takes no command for a minute, longer than this test may run:
      // connected and "ready", answering nothing (restarted after the test).
      await admin.call('CLIENT', 'PAUSE', '60000', 'ALL')
      using deadline = Deadline.after(300)
      const error = await callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 5 },
        deadline,
        limits: { admission },
      }).catch((e: unknown) => e)
      expect(isDeadlineExceeded(error)).toBe(true)
      expect(fake.requests).toHaveLength(0)
    })
  },
)
