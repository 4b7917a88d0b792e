import { EventEmitter } from 'node:events'
import { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { currentDeadline, ManualClock } from '@hourglass/core'
import type { NextFunction, Request, Response } from 'express'
import { expect, it } from 'vitest'
import { deadline, type IngressEndMessage } from '../src/index.js'
import { record } from './support/servers.js'

// A response with no `socket` at all — a test double's, as `npm run bench`'s
// middleware row drives deadline() with, or a mocking library's — is run as
// any other: the whole-body count (which reads the socket's bytes) is not
// taken. It threw a TypeError out of deadline() for every such request.
it('deadline() runs the chain for a request whose response has no socket (a test double)', () => {
  const ends = record<IngressEndMessage>('hourglass:ingress:end')
  const middleware = deadline({ defaultMs: 1000 })
  const req = Object.assign(new EventEmitter(), {
    headers: { host: '127.0.0.1' },
    method: 'GET',
  }) as unknown as Request
  const res = Object.assign(new EventEmitter(), {
    statusCode: 200,
    writableEnded: false,
    writableFinished: false,
  }) as unknown as Response
  let ran = false
  middleware(req, res, (() => {
    ran = currentDeadline() !== undefined
  }) as NextFunction)
  expect(ran).toBe(true)
  Object.assign(res, { writableEnded: true, writableFinished: true })
  res.emit('finish')
  res.emit('close')
  // Over: its end published once, ok.
  expect(ends.messages.map((m) => m.outcome)).toEqual(['ok'])
  ends.stop()
})

// Node's own classes built by hand, no socket (`new IncomingMessage()`, as
// some test harnesses build them): the deadline's end, from its timer, read
// the upload's socket as a WeakMap key and threw — an uncaught exception,
// the process gone.
it.each([
  ['nothing written yet (the 504)', () => {}],
  [
    'a declared body held, end() not called',
    (res: ServerResponse) => {
      res.writeHead(200, { 'content-length': '5' })
      res.write('hello')
    },
  ],
])('the deadline ends a hand-built request with no socket, %s: no throw', (_, handle) => {
  const expired = record<unknown>('hourglass:ingress:expire')
  const clock = new ManualClock()
  const req = new IncomingMessage(undefined as unknown as Socket)
  req.method = 'GET'
  req.headers = { host: 'x' }
  const res = new ServerResponse(req)
  deadline({ clock, defaultMs: 100, reserveMs: 0 })(
    req as unknown as Request,
    res as unknown as Response,
    (() => handle(res)) as NextFunction,
  )
  try {
    expect(() => clock.advance(100)).not.toThrow()
    // Expired and answered as any other (its end waits for a socket that never comes).
    expect(expired.messages).toHaveLength(1)
    expect(res.headersSent).toBe(true)
  } finally {
    expired.stop()
  }
})
