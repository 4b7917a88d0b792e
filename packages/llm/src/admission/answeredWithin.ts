import { MAX_TIMER_MS } from '@hourglass/core'

/**
 * `command`, or a rejection with `message` once it has gone `ms` without
 * settling (the command goes on; its late answer is dropped). What a Redis
 * round trip is bounded by whatever the client's own settings: a frozen
 * Redis keeps the connection `ready` and answers nothing, and a client
 * queueing commands offline holds them until Redis is back — a call with
 * no deadline waited for good. The timer does not keep the process up.
 */
export function answeredWithin<T>(command: Promise<T>, ms: number, message: string): Promise<T> {
  // Longer than Node arms a timer for (~24.8 days): no bound.
  if (!(ms <= MAX_TIMER_MS)) return command
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(message)), ms)
    timer.unref?.()
    command.then(
      (reply) => {
        clearTimeout(timer)
        resolve(reply)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}
