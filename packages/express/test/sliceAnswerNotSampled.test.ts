import { request } from 'undici'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { deadline, deadlineErrors, type IngressEndMessage } from '../src/index.js'
import { client, listen, majors, type Running, record } from './support/servers.js'

// What the adaptive reserve learns from: spied on, so the test reads what was
// sampled, not a reserve figure the machine's load would move.
const sampled = vi.hoisted(() => ({ answers: [] as number[] }))
vi.mock('@hourglass/core', async (importOriginal) => {
  const core = await importOriginal<typeof import('@hourglass/core')>()
  return {
    ...core,
    recordAnswerLateness: (ms: number, at?: number) => {
      sampled.answers.push(ms)
      core.recordAnswerLateness(ms, at)
    },
  }
})

/**
 * The adaptive reserve learns how late the 504s deadline()'s own timer
 * writes are flushed after the request's deadline. A 504 that
 * deadlineErrors() writes because a slice ran out (its `run` rejected, the
 * request still has time) is no such answer: written before the request's
 * deadline, it was sampled as a 0 ms lateness. The README's own plan makes
 * nearly every 504 such a one, and 64 of them evicted every real sample:
 * a reserve learned at 95 ms fell back to its 10 ms floor.
 */
describe.each(majors)('a 504 for a slice that ran out ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
    sampled.answers.length = 0
  })

  it("is not sampled as the request timer's answer lateness; the timer's own 504 still is", async () => {
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const app = major.app()
    app.use(deadline({ defaultMs: 200, reserveMs: 10, plan: { model: 0.5, write: 0.5 } }))
    app.get(
      '/slice',
      major.route(async (req) => {
        await req.plan!.run('model', () => new Promise(() => {}))
      }),
    )
    app.get('/timer', () => {
      // Never answers: the middleware's own timer writes the 504.
    })
    app.use(deadlineErrors())
    server = await listen(app)

    const slice = await request(`${server.url}/slice`, { dispatcher: agent })
    expect(slice.statusCode).toBe(504)
    expect(((await slice.body.json()) as { slice: string }).slice).toBe('model')
    await ends.count(1)
    expect(sampled.answers).toEqual([])

    const timer = await request(`${server.url}/timer`, { dispatcher: agent })
    expect(timer.statusCode).toBe(504)
    await timer.body.text()
    await ends.count(2)
    ends.stop()
    expect(sampled.answers).toHaveLength(1)
    expect(sampled.answers[0]).toBeGreaterThanOrEqual(0)
  })
})
