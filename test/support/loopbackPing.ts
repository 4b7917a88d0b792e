import { once } from 'node:events'
import { connect, createServer, type Socket } from 'node:net'

/**
 * A control for "how long does one loopback message take right now": a
 * byte written at an instant is timed on arrival at the other end of a
 * socket pair in the same process. A disconnect reaches the next hop as one
 * such message (a FIN), so on a loaded event loop this is the fair yardstick.
 */
export interface LoopbackPing {
  /** Send one byte now; `arrived` gets the performance.now() of its arrival. */
  ping(arrived: (at: number) => void): void
  close(): Promise<void>
}

export async function loopbackPing(): Promise<LoopbackPing> {
  const waiting: ((at: number) => void)[] = []
  let far: Socket | undefined
  const server = createServer((socket) => {
    far = socket
    socket.on('data', (bytes: Buffer) => {
      const at = performance.now()
      for (let i = 0; i < bytes.length; i++) waiting.shift()?.(at)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  const near = connect({ port, host: '127.0.0.1', noDelay: true })
  await Promise.all([once(near, 'connect'), once(server, 'connection')])
  return {
    ping(arrived) {
      waiting.push(arrived)
      near.write('.')
    },
    async close() {
      near.destroy()
      far?.destroy()
      server.close()
      await once(server, 'close')
    },
  }
}
