import { expect, it, vi } from 'vitest'
import { untilSignalled } from '../src/untilSignalled.js'
import { signalsAsBinary } from './support/signalsAsBinary.js'

// The gateway's stop: a second SIGINT or SIGTERM during the drain ends the
// process at once. After a hang-up the terminal may be gone, and Node 20's
// `process.exit` (it resets the tty) crashed on it (nodejs/node#51519): a
// stop after a SIGHUP ends by the signal's default action instead, as the
// drain's own end does after one. Signals are emitted in this process, with
// `process.exit` and `process.kill` stubbed, as the binary (which holds
// from its first line) runs it.

signalsAsBinary()

function stubbed() {
  const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never)
  const kill = vi.spyOn(process, 'kill').mockImplementation(() => true)
  // The worker's own signal listeners stay.
  vi.spyOn(process, 'removeAllListeners').mockImplementation(() => process)
  return { exit, kill }
}

it('a SIGTERM after a SIGHUP ends by the signal, not process.exit, and its line says after what', async () => {
  const { exit, kill } = stubbed()
  const lines: string[] = []
  const stop = untilSignalled((signal, first) => lines.push(`${signal} after ${first}`))
  try {
    process.emit('SIGHUP', 'SIGHUP')
    expect(await stop.first).toBe('SIGHUP')
    process.emit('SIGTERM', 'SIGTERM')
    expect(kill).toHaveBeenCalledWith(process.pid, 'SIGTERM')
    expect(kill.mock.invocationCallOrder[0]!).toBeLessThan(
      exit.mock.invocationCallOrder[0] ?? Number.POSITIVE_INFINITY,
    )
    expect(lines).toEqual(['SIGTERM after SIGHUP'])
  } finally {
    stop.release()
  }
})

it('a second SIGINT after a SIGINT still exits at once with 130', async () => {
  const { exit, kill } = stubbed()
  const lines: string[] = []
  const stop = untilSignalled((signal, first) => lines.push(`${signal} after ${first}`))
  try {
    process.emit('SIGINT', 'SIGINT')
    expect(await stop.first).toBe('SIGINT')
    process.emit('SIGINT', 'SIGINT')
    expect(kill).not.toHaveBeenCalled()
    expect(exit).toHaveBeenCalledWith(130)
    expect(lines).toEqual(['SIGINT after SIGINT'])
  } finally {
    stop.release()
  }
})
