import { once } from 'node:events'
import http2 from 'node:http2'
import type { AddressInfo } from 'node:net'
import type { NextFunction, Request, Response } from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, type IngressLateWriteMessage } from '../src/index.js'

// HTTP/2 has no reason phrase: Node's compat response warns
// ("UnsupportedWarning: Status message is not supported by HTTP/2") on any
// read or write of `statusMessage`. The 504 set one, so the first deadline
// 504 of every HTTP/2 server printed that warning on stderr — for code the
// app never wrote. (Its own file: Node warns once per process.)

describe('a 504 on an HTTP/2 compat server', () => {
  let close: (() => void) | undefined
  afterEach(() => {
    close?.()
    close = undefined
  })

  it('is answered without touching statusMessage: no UnsupportedWarning; a late status is still swallowed', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`)
    process.on('warning', onWarning)
    try {
      const late: IngressLateWriteMessage[] = []
      const middleware = deadline({
        defaultMs: 60,
        reserveMs: 10,
        onLateWrite: (event) => late.push(event),
      })
      const server = http2.createServer((req, res) => {
        const next = (() => {
          ;(req as unknown as Request).deadline.onDone(() => {
            res.statusCode = 500
          })
        }) as NextFunction
        middleware(req as unknown as Request, res as unknown as Response, next)
      })
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
      close = () => {
        session.destroy()
        server.close()
      }
      // The caller's budget (defaultMs's size): its 504 says it is gone.
      const stream = session.request({ ':path': '/slow', 'x-deadline-remaining-ms': '60' })
      const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders]
      stream.resume()
      await once(stream, 'end')
      // process.emitWarning emits on the next tick.
      await new Promise((resolve) => setImmediate(resolve))

      expect(headers[':status']).toBe(504)
      expect(headers['x-deadline-expired']).toBe('1')
      expect(late.map((e) => e.method)).toEqual(['statusCode'])
      expect(warnings).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
  })
})
