import { isDeadlineExceeded } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, expressChannels, type IngressLateWriteMessage } from '../src/index.js'
import { aborted, client, listen, majors, type Running, record } from './support/servers.js'

describe.each(majors)('writes after the 504 ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('are swallowed and counted, never "Cannot set headers after they are sent"', async () => {
    const app = major.app()
    const late: IngressLateWriteMessage[] = []
    const handlerDone = new Promise<{ thrown: unknown[]; chained: unknown }>((resolve) => {
      // A fixed reserve: the adaptive one learns from this file's own 504s, and
      // on a loaded machine it can grow past these small budgets, so the
      // handler would never run (a 504 on arrival) and the test would hang.
      app.use(deadline({ reserveMs: 10, onLateWrite: (event) => late.push(event) }))
      app.get(
        '/slow',
        major.route(async (req, res) => {
          await aborted(req.deadline.signal)
          const thrown: unknown[] = []
          let chained: unknown
          for (const write of [
            () => res.setHeader('x-late', '1'),
            () => {
              chained = res.status(200).set('x-late', '2').json({ late: true })
            },
            () => res.send('late'),
            () => res.sendStatus(201),
            () => res.cookie('late', '1'),
            () => res.redirect('/elsewhere'),
            () => res.writeHead(200),
            () => res.write('late'),
            () => res.end('late'),
          ]) {
            try {
              write()
            } catch (error) {
              thrown.push(error)
            }
          }
          resolve({ thrown, chained: chained === res })
        }),
      )
    })
    server = await listen(app)
    const events = record<IngressLateWriteMessage>(expressChannels.lateWrite.name)
    const res = await request(`${server.url}/slow`, {
      headers: { 'x-deadline-remaining-ms': '60' },
      dispatcher: agent,
    })
    const body = await res.body.json()
    const { thrown, chained } = await handlerDone
    events.stop()

    expect(res.statusCode).toBe(504)
    expect(res.headers['x-late']).toBeUndefined()
    expect(body).toMatchObject({ error: 'deadline_exceeded', budgetMs: 60 })
    expect(thrown).toEqual([])
    expect(chained).toBe(true)
    expect(late.map((e) => e.method)).toEqual([
      'setHeader',
      'status',
      'set',
      'json',
      'send',
      'sendStatus',
      'cookie',
      'redirect',
      'writeHead',
      'write',
      'end',
    ])
    expect(events.messages).toEqual(late)

    // The connection carries the next request as if nothing happened.
    const next = await request(`${server.url}/missing`, { dispatcher: agent })
    expect(next.statusCode).toBe(404)
    await next.body.dump()
    expect(server.connections).toHaveLength(1)
  })

  it('hand a trailing callback the deadline error instead of leaving it hanging', async () => {
    const app = major.app()
    const callbackErrors: unknown[] = []
    const done = new Promise<void>((resolve) => {
      app.use(deadline({ reserveMs: 10 })) // fixed, as above
      app.get(
        '/slow',
        major.route(async (req, res) => {
          await aborted(req.deadline.signal)
          await new Promise<void>((r) =>
            res.write('late', (error) => {
              callbackErrors.push(error)
              r()
            }),
          )
          resolve()
        }),
      )
    })
    server = await listen(app)
    const res = await request(`${server.url}/slow`, {
      headers: { 'x-deadline-remaining-ms': '40' },
      dispatcher: agent,
    })
    await res.body.dump()
    await done
    expect(res.statusCode).toBe(504)
    expect(callbackErrors).toHaveLength(1)
    expect(isDeadlineExceeded(callbackErrors[0])).toBe(true)
  })
})
