import type { IncomingMessage, ServerResponse } from 'node:http'
import { describe, expect, it } from 'vitest'
import { expressChannels, type IngressEndMessage } from '../src/index.js'
import { headAtDeadline } from './support/headAtDeadline.js'
import { majors, record } from './support/servers.js'

/**
 * A head the route labelled with its own body's coding — a proxy relaying
 * its upstream's `Content-Encoding: gzip` head with `writeHead()`, the body
 * still to come — and not sent yet when the deadline falls. Nothing of the
 * response is on the wire and no wrapper on the response encodes what
 * `end()` is given: the head is dropped and the 504 goes in its place, as
 * for any head not sent. Before, the coding alone made it a started
 * response: with a Content-Length its socket was destroyed (no answer, the
 * pipelined request after it lost), chunked it ended as an empty 200
 * labelled gzip.
 */

const statusLines = (received: string) => received.match(/HTTP\/1\.1 \d+/g)

describe.each(majors)('a stored head labelled with a coding of its own ($name)', (major) => {
  it.each([
    {
      how: 'gzip with a Content-Length (a proxy relaying its upstream head)',
      head: (res: ServerResponse) =>
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-encoding': 'gzip',
          'content-length': '2048',
        }),
    },
    {
      how: 'gzip, chunked',
      head: (res: ServerResponse) =>
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }),
    },
    {
      how: 'br set with setHeader() before writeHead()',
      head: (res: ServerResponse) => {
        res.setHeader('Content-Encoding', 'br')
        res.writeHead(200)
      },
    },
  ])(
    '$how gets the 504 in its place, unlabelled, and the connection carries the next request',
    async ({ head }) => {
      const ends = record<IngressEndMessage>(expressChannels.end.name)
      try {
        const { received } = await headAtDeadline(major, head)
        await ends.count(2)
        expect(statusLines(received)).toEqual(['HTTP/1.1 504', 'HTTP/1.1 200'])
        const first = received.slice(0, received.indexOf('HTTP/1.1 200'))
        expect(first.toLowerCase()).not.toContain('content-encoding')
        expect(received).toContain(
          '{"error":"deadline_exceeded","budgetMs":100,"elapsedMs":100,"slice":null}HTTP/1.1 200',
        )
        expect(received.endsWith('next')).toBe(true)
        expect(
          ends.messages.map((m) => [(m.req as IncomingMessage).url, m.outcome, m.statusCode]),
        ).toEqual([
          ['/first', 'expired', 504],
          ['/next', 'ok', 200],
        ])
      } finally {
        ends.stop()
      }
    },
  )
})
