import { afterEach } from 'vitest'
import { rawServer } from './rawServer.js'

/**
 * Servers whose answer is a 200 stream that sends `frames`, then either is
 * cut (`cutAfter`: its connection destroyed once they are written) or goes
 * quiet (`holdAfter`: nothing more, no end). Each returns the server's base
 * URL; every server is closed after its test.
 */
export function useStreamServers(): {
  cutAfter(frames: string): Promise<string>
  holdAfter(frames: string): Promise<string>
} {
  const servers: Array<{ close(): void }> = []
  afterEach(() => {
    for (const server of servers.splice(0)) server.close()
  })
  async function serve(frames: string, cut: boolean) {
    const server = await rawServer((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(frames, () => {
        if (cut) res.destroy()
      })
    })
    servers.push(server)
    return server.baseURL
  }
  return {
    cutAfter: (frames) => serve(frames, true),
    holdAfter: (frames) => serve(frames, false),
  }
}
