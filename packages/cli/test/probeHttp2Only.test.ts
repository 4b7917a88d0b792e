import { once } from 'node:events'
import { readFileSync, rmSync } from 'node:fs'
import { createSecureServer, createServer, type Http2Server } from 'node:http2'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'
import { describeFailure } from '../src/probe/describeFailure.js'
import { hasOpenssl, selfSignedCertificate } from './support/selfSignedCertificate.js'

// An endpoint that speaks HTTP/2 only (an h2c upstream, a gRPC-style
// service, an HTTPS listener offering only h2) cannot be probed: fetch's
// client, undici, speaks HTTP/1.1 there. The one line did not say so: on a
// plain port it read "did not answer in HTTP/1.1 (Response does not match
// the HTTP/1.1 protocol (Expected HTTP/, RTSP/ or ICE/))", with TLS
// "TLS handshake with … failed (ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL)"
// and no meaning, where every other TLS code has one.

let dir: string | undefined
let server: Http2Server | undefined
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)))
  server = undefined
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

async function listen(created: Http2Server): Promise<number> {
  server = created
  created.listen(0, '127.0.0.1')
  await once(created, 'listening')
  return (created.address() as AddressInfo).port
}

function probeOnce(url: string) {
  return runMain(['probe', url, '--warmup', '0', '--samples', '1'])
}

it('an h2c server on a plain port: named as HTTP/2 only', async () => {
  const port = await listen(createServer((_req, res) => res.end('ok')))
  const run = await probeOnce(`http://127.0.0.1:${port}/`)
  expect(run.code).toBe(1)
  expect(run.stdout).toBe('')
  expect(run.stderr.trim().split('\n').at(-1)).toBe(
    `hourglass probe: 127.0.0.1:${port} did not answer in HTTP/1.1: it speaks HTTP/2 only (its first bytes are an HTTP/2 SETTINGS frame), and undici, the HTTP client of fetch, speaks HTTP/1.1 on an http: URL`,
  )
})

it.skipIf(!hasOpenssl)(
  'an HTTPS server offering h2 alone: the TLS code says what it means',
  async () => {
    const made = selfSignedCertificate('hourglass-cli-h2-')
    dir = made.dir
    const { keyFile, certFile } = made
    const port = await listen(
      createSecureServer(
        { key: readFileSync(keyFile), cert: readFileSync(certFile), allowHTTP1: false },
        (_req, res) => res.end('ok'),
      ),
    )
    const run = await probeOnce(`https://127.0.0.1:${port}/`)
    expect(run.code).toBe(1)
    expect(run.stderr.trim().split('\n').at(-1)).toBe(
      `hourglass probe: TLS handshake with 127.0.0.1:${port} failed (ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL: the server offers no HTTP/1.1 (ALPN), which undici, the HTTP client of fetch, speaks: HTTP/2 only?)`,
    )
  },
)

// Over TLS a server that negotiates no ALPN protocol and speaks HTTP/2 anyway
// (grpc-go before 1.67) sends the same SETTINGS frame: the line said undici
// speaks HTTP/1.1 "on an http: URL" of an https: one.
it('h2 over TLS without ALPN: named as HTTP/2 only, not as an http: URL', () => {
  const settings =
    '\u0000\u0000\u0006\u0004\u0000\u0000\u0000\u0000\u0000\u0000\u0003\u0000\u0000\u0000d'
  const error = Object.assign(
    new Error('Response does not match the HTTP/1.1 protocol (Expected HTTP/, RTSP/ or ICE/)'),
    { name: 'HTTPParserError', data: settings },
  )
  expect(describeFailure(error, new URL('https://127.0.0.1:8443/'))).toBe(
    '127.0.0.1:8443 did not answer in HTTP/1.1: it speaks HTTP/2 only (its first bytes are an HTTP/2 SETTINGS frame), and undici, the HTTP client of fetch, speaks HTTP/1.1 only (the server negotiated no ALPN protocol)',
  )
})
