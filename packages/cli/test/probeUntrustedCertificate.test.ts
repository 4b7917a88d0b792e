import { once } from 'node:events'
import { readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'
import { assertBuilt, hourglassBin, runNode } from '../../../test/cli/runNode.js'
import { hasOpenssl, selfSignedCertificate } from './support/selfSignedCertificate.js'

// `hourglass probe https://inventory.internal/…` (the README's own example,
// a service behind a private CA) ended with "TLS handshake … failed
// (UNABLE_TO_VERIFY_LEAF_SIGNATURE: the certificate's issuer is not
// trusted)" and nothing else: the probe has no flag to trust a CA, and the
// operator was not told the one way there is, Node's NODE_EXTRA_CA_CERTS.

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
  const made = selfSignedCertificate('hourglass-cli-tls-')
  dir = made.dir
  const { keyFile, certFile } = made
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
