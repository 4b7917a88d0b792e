import { EventEmitter } from 'node:events'
import { currentDeadline } from '@hourglass/core'
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
