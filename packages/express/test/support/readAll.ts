import type { Socket } from 'node:net'

/**
 * What a paused client reads once it resumes, until its socket closes (or
 * `until` says, given the last bytes): its first and last 32 bytes — the
 * rest, megabytes of buffered events, is not kept. Stops listening when
 * `until` is met, so the connection can be read again.
 */
export function readAll(
  socket: Socket,
  until?: (tail: string) => boolean,
): Promise<{ head: string; tail: string }> {
  let head = ''
  let tail = ''
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('latin1')
      if (head.length < 32) head = (head + text).slice(0, 32)
      tail = (tail + text).slice(-32)
      if (until?.(tail)) {
        socket.off('data', onData)
        resolve({ head, tail })
      }
    }
    socket.on('data', onData)
    socket.on('close', () => resolve({ head, tail }))
    socket.resume()
  })
}
