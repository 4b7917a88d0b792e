import { ManualClock } from '@hourglass/core'
import express, { type Router } from 'express'
import express4 from 'express4'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

/**
 * Which `deadline()` owns a request when routers carry their own: the first
 * one the request passes, whoever answers it (README, "Mounting
 * `deadline()` twice"). `router.use(deadline())` runs for every request that
 * enters the router, one that matches none of its routes included, so a
 * sibling router mounted on the same path after it inherits its budget.
 * Mounted on its own path, or on its routes, a router's `deadline()` binds
 * only its own requests.
 */
describe.each(majors)('deadline() in routers ($name)', (major) => {
  const makeRouter = (): Router =>
    major.name === 'express 5' ? express.Router() : express4.Router()
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function budgets(mount: 'shared path' | 'own paths' | 'on routes'): Promise<number[]> {
    const clock = new ManualClock()
    const seen: number[] = []
    const app = major.app()
    const admin = makeRouter()
    const open = makeRouter()
    const short = deadline({ clock, defaultMs: 50, reserveMs: 0 })
    const long = deadline({ clock, defaultMs: 5000, reserveMs: 0 })
    // The requests are always /api/admin/x and /api/public/x.
    const [adminPath, publicPath] = mount === 'own paths' ? ['/x', '/x'] : ['/admin/x', '/public/x']
    if (mount === 'on routes') {
      admin.get(adminPath, short, (req, res) => res.json(req.deadline.remaining()))
      open.get(publicPath, long, (req, res) => res.json(req.deadline.remaining()))
    } else {
      admin.use(short)
      admin.get(adminPath, (req, res) => res.json(req.deadline.remaining()))
      open.use(long)
      open.get(publicPath, (req, res) => res.json(req.deadline.remaining()))
    }
    if (mount === 'own paths') {
      app.use('/api/admin', admin)
      app.use('/api/public', open)
    } else {
      app.use('/api', admin)
      app.use('/api', open)
    }
    app.use(deadlineErrors())
    server = await listen(app)
    for (const path of ['/api/admin/x', '/api/public/x']) {
      const answer = await request(`${server.url}${path}`, { dispatcher: agent })
      expect(answer.statusCode).toBe(200)
      seen.push((await answer.body.json()) as number)
    }
    return seen
  }

  it('a router.use(deadline()) on a shared path binds the requests it passes on to a sibling router', async () => {
    expect(await budgets('shared path')).toEqual([50, 50])
  })

  it("mounted on its own path, or on its routes, each router's deadline() binds only its requests", async () => {
    expect(await budgets('own paths')).toEqual([50, 5000])
    await server?.close()
    server = undefined
    expect(await budgets('on routes')).toEqual([50, 5000])
  })
})
