import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** What the replay server answers: a status, headers and a body sent as these exact chunks. */
export interface Replay {
  status: number
  headers?: Record<string, string>
  chunks: readonly (string | Uint8Array)[]
}

export interface ReplayServer {
  url: string
  /** The last request body received, parsed as JSON. */
  lastBody: () => unknown
  close: () => Promise<void>
}

/**
 * A real HTTP server on 127.0.0.1, port 0, that answers every request with
 * one recorded reply, writing each chunk separately (and waiting for it to
 * drain) so the client sees the splits the test chose — including splits in
 * the middle of a UTF-8 character.
 */
export async function startReplayServer(
  reply: (req: IncomingMessage) => Replay,
): Promise<ReplayServer> {
  let lastBody: unknown
  const server: Server = createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const part of req) parts.push(part as Buffer)
    const text = Buffer.concat(parts).toString('utf8')
    try {
      lastBody = text === '' ? undefined : JSON.parse(text)
    } catch {
      lastBody = text
    }
    const r = reply(req)
    res.writeHead(r.status, r.headers ?? {})
    res.flushHeaders()
    for (const chunk of r.chunks) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk)
      if (!res.write(bytes)) await new Promise((resolve) => res.once('drain', resolve))
      // Let each chunk leave as its own TCP write so the client sees the split.
      await new Promise((resolve) => setImmediate(resolve))
    }
    res.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    lastBody: () => lastBody,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((err) => (err ? reject(err) : resolve()))
      }),
  }
}

/** Splits a string's UTF-8 bytes into chunks of `size` bytes: cuts land inside characters. */
export function byteChunks(text: string, size: number): Uint8Array[] {
  const bytes = Buffer.from(text, 'utf8')
  const out: Uint8Array[] = []
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size))
  return out
}
