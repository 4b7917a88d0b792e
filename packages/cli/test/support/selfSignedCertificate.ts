import { execFileSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** openssl makes the certificates: none is committed, and a machine without it skips. */
export const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()

/**
 * A fresh self-signed certificate for 127.0.0.1 (an EC key, two days) in a
 * new temporary folder: the caller removes `dir`.
 */
export function selfSignedCertificate(prefix: string): {
  dir: string
  keyFile: string
  certFile: string
} {
  const dir = mkdtempSync(join(tmpdir(), prefix))
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
  return { dir, keyFile, certFile }
}
