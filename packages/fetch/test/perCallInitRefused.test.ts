import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createFetch, type HourglassFetch } from '../src/index.js'
import { rejection } from './helpers.js'

// A per-call init that is no object, or an `init.dispatcher` that is no
// Dispatcher, is refused by name, its promise rejected before anything is
// sent. Before, `fetch(url, 'str')` sent a GET (undici refuses such an init),
// and `dispatcher: 5` failed with "Cannot read properties of undefined
// (reading 'bind')".

let server: Server
let url: string
let fetch: HourglassFetch
let received = 0

beforeAll(async () => {
  server = createServer((_req, res) => {
    received += 1
    res.end('ok')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  fetch = createFetch()
})
afterAll(async () => {
  await fetch.close()
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

it.each([
  ['str', "init must be an object (a RequestInit), got 'str' (a string)"],
  [5, 'init must be an object (a RequestInit), got 5'],
])('an init of %j is refused, nothing sent', async (init, message) => {
  const error = await rejection(fetch(url, init as never))
  expect(error).toBeInstanceOf(TypeError)
  expect((error as Error).message).toBe(message)
  expect(received).toBe(0)
})

it.each([
  [5, 'got 5'],
  [{}, 'got an object'],
])('an init.dispatcher of %j is refused by name, nothing sent', async (dispatcher, got) => {
  const error = await rejection(fetch(url, { dispatcher: dispatcher as never }))
  expect(error).toBeInstanceOf(TypeError)
  expect((error as Error).message).toBe(
    `dispatcher must be an undici Dispatcher (an Agent, a ProxyAgent, …), ${got}`,
  )
  expect(received).toBe(0)
})

it('null and undefined are still no init, and dispatcher: null no dispatcher', async () => {
  const before = received
  expect((await fetch(url, null)).status).toBe(200)
  expect((await fetch(url, undefined)).status).toBe(200)
  expect((await fetch(url, { dispatcher: null as never })).status).toBe(200)
  expect(received - before).toBe(3)
})
