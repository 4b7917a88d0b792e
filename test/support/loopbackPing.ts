import { once } from 'node:events'
import { connect, createServer, type Socket } from 'node:net'

/**
 * A control for "how long does one loopback message take right now": a
 * byte written at an instant is timed on arrival at the other end of a
 * socket pair in the same process. A disconnect reaches the next hop as one
 * such message (a FIN), so on a loaded event loop this is the fair yardstick.
 *
 * Timed at the end of the loop turn it was read in (`setImmediate`, after
 * that turn's I/O callbacks), not when its own callback ran: a FIN read in
 * the same turn is handled somewhere in the same batch of callbacks, after
 * whatever came before it (other requests' work, 17–38 ms on a loaded
 * machine). Timed at its read, the byte was early in the batch and a hop
 * that stopped later in that very turn was charged for the batch: most of
 * the chaos run's stop misses were that (session 32: 16 of 16 service-stop
 * misses checked, 5 of 6 upstream-stop ones). A hop that stops a turn or
 * more after its FIN still shows.
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
      const count = bytes.length
      setImmediate(() => {
        const at = performance.now()
        for (let i = 0; i < count; i++) waiting.shift()?.(at)
      })
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
