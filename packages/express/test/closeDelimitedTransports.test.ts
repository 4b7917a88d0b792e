import fs from 'node:fs'
import https from 'node:https'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import tls from 'node:tls'
import { fileURLToPath } from 'node:url'
import { ManualClock } from '@hourglass/core'
import express from 'express'
import { afterEach, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'

/**
 * A close-framed body cut by the deadline is reset (closeDelimitedCut.test.ts)
 * — over plain TCP. A TLS socket's own handle is no TCP one and a Unix
 * socket has none: `resetAndDestroy()` threw ERR_INVALID_HANDLE_TYPE from
 * the deadline's timer, and the process went down. Over TLS the TCP socket
 * under it is reset; a Unix socket, which has no reset, is closed.
 */
const fixtures = fileURLToPath(new URL('../../fetch/test/fixtures/', import.meta.url))
let close: (() => void) | undefined
afterEach(() => {
  close?.()
  close = undefined
})

function app(clock: ManualClock) {
  const a = express()
  a.use(deadline({ clock, reserveMs: 0, defaultMs: 1000 }))
  a.get('/feed', (_req, res) => {
    res.type('text')
    res.write('part 1 of 3\n')
  })
  a.use(deadlineErrors())
  return a
}

/** An HTTP/1.0 exchange; the clock moves past the deadline once the first part has come. */
function exchange(
  socket: net.Socket,
  clock: ManualClock,
): Promise<{ how: string; thrown: unknown[] }> {
  const thrown: unknown[] = []
  return new Promise((resolve) => {
    let got = ''
    let moved = false
    socket.on('data', (chunk) => {
      got += chunk
      if (!moved && got.includes('part 1 of 3')) {
        moved = true
        try {
          clock.advance(1000)
        } catch (error) {
          thrown.push(error)
        }
      }
    })
    socket.on('error', (e: NodeJS.ErrnoException) => resolve({ how: e.code ?? 'error', thrown }))
    socket.on('end', () => resolve({ how: 'end', thrown }))
    socket.write('GET /feed HTTP/1.0\r\nHost: x\r\n\r\n')
  })
}

it('over TLS, an HTTP/1.0 stream cut by the deadline is reset, nothing thrown', async () => {
  const clock = new ManualClock()
  const server = https.createServer(
    {
      key: fs.readFileSync(path.join(fixtures, 'svc.test.key.pem')),
      cert: fs.readFileSync(path.join(fixtures, 'svc.test.cert.pem')),
    },
    app(clock),
  )
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  close = () => server.close()
  const { port } = server.address() as net.AddressInfo
  const socket = tls.connect(port, '127.0.0.1', { rejectUnauthorized: false })
  const { how, thrown } = await exchange(socket, clock)
  expect(thrown).toEqual([])
  expect(how).toBe('ECONNRESET')
})

it('on a Unix socket (nginx proxy_pass http://unix:…), the cut throws nothing: closed, as no reset exists there', async () => {
  const clock = new ManualClock()
  const file = path.join(os.tmpdir(), `hg-close-${process.pid}-${Date.now()}.sock`)
  const server = app(clock).listen(file)
  await new Promise((r) => server.once('listening', r))
  close = () => {
    server.close()
    fs.rmSync(file, { force: true })
  }
  const { how, thrown } = await exchange(net.connect(file), clock)
  expect(thrown).toEqual([])
  expect(how).toBe('end')
})
