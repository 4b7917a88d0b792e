import type { Socket } from 'node:net'

/**
 * Resolves with everything `socket` has sent (after `seen`, what it had sent
 * already) once that includes `text`; rejects if the socket closes first.
 */
export function untilSent(socket: Socket, text: string, seen = ''): Promise<string> {
  if (seen.includes(text)) return Promise.resolve(seen)
  return new Promise((resolve, reject) => {
    let got = seen
    const onData = (data: string) => {
      got += data
      if (!got.includes(text)) return
      socket.off('data', onData)
      socket.off('close', onClose)
      resolve(got)
    }
    const onClose = () => reject(new Error(`closed after ${JSON.stringify(got)}`))
    socket.on('data', onData)
    socket.on('close', onClose)
  })
}
