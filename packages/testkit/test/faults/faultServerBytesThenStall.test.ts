import { request as httpRequest } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { type FaultServer, faultServer } from '../../src/index.js'

let closers: FaultServer[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

/** The response's headers, once they came; the request is then destroyed (the body is never complete). */
function headersOf(url: string): Promise<Record<string, string | string[] | undefined>> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false }, (res) => {
      resolve(res.headers)
      req.destroy()
    })
    req.on('error', (error) => {
      if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error)
    })
    req.end()
  })
}

describe('faultServer bytes-then-stall always stalls', () => {
  it('bytes: 0 announces more than it sends (a complete empty 200 was no stall)', async () => {
    const server = await faultServer({ type: 'bytes-then-stall', bytes: 0 })
    closers.push(server)
    const headers = await headersOf(server.url)
    expect(Number(headers['content-length'])).toBeGreaterThan(0)
  })

  it('a declaredBytes not above bytes is refused, naming both', async () => {
    await expect(
      faultServer({ type: 'bytes-then-stall', bytes: 4, declaredBytes: 4 }),
    ).rejects.toThrow(/declaredBytes \(4\) must be more than bytes \(4\)/)
    await expect(
      faultServer({ type: 'bytes-then-stall', bytes: 8, declaredBytes: 4 }),
    ).rejects.toThrow(TypeError)
  })
})
