import { execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'
import { assertBuilt, hourglassBin, runNode } from '../../../test/cli/runNode.js'

// `hourglass probe https://inventory.internal/…` (the README's own example,
// a service behind a private CA) ended with "TLS handshake … failed
// (UNABLE_TO_VERIFY_LEAF_SIGNATURE: the certificate's issuer is not
// trusted)" and nothing else: the probe has no flag to trust a CA, and the
// operator was not told the one way there is, Node's NODE_EXTRA_CA_CERTS.

/** openssl makes the certificate: none is committed, and a machine without it skips. */
const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()

let dir: string | undefined
let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)))
  server = undefined
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

/** An HTTPS server on loopback with a fresh self-signed certificate for 127.0.0.1; its URL and the certificate file. */
async function selfSigned(): Promise<{ url: string; certFile: string }> {
  dir = mkdtempSync(join(tmpdir(), 'hourglass-cli-tls-'))
  const keyFile = join(dir, 'key.pem')
  const certFile = join(dir, 'cert.pem')
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  )
  server = createServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (_req, res) =>
    res.end('ok'),
  )
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/`, certFile }
}

it.skipIf(!hasOpenssl)(
  'a certificate this machine does not trust: the one line says how to trust it, and that way works',
  async () => {
    const { url, certFile } = await selfSigned()
    const run = await runMain(['probe', url, '--warmup', '0', '--samples', '1'])
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr.trim().split('\n').at(-1)).toBe(
      `hourglass probe: TLS handshake with ${new URL(url).host} failed (DEPTH_ZERO_SELF_SIGNED_CERT: the certificate is self-signed); to trust it, give its CA certificate (PEM) as NODE_EXTRA_CA_CERTS=<file>`,
    )
    // The hint holds: the same probe, the certificate trusted, measures.
    assertBuilt()
    const trusted = await runNode(
      [hourglassBin, 'probe', url, '--warmup', '0', '--samples', '1', '--json'],
      { env: { NODE_EXTRA_CA_CERTS: certFile }, killAfterMs: 20_000 },
    )
    expect(trusted.stderr).not.toMatch(/TLS handshake/)
    expect(trusted.code).toBe(0)
    expect(JSON.parse(trusted.stdout).samples[0].status).toBe(200)
  },
)
