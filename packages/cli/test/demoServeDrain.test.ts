import { once } from 'node:events'
import { connect } from 'node:net'
import {
  afterAll,
  afterEach,
  beforeEach,
  describe,
  expect,
  it,
  type MockInstance,
  vi,
} from 'vitest'
import { main } from '../src/index.js'
import {
  forgetStartupSignals,
  holdStartupSignals,
  releaseStartupSignals,
  signalToEndBy,
} from '../src/startupSignals.js'
import { expectNothingLeftWhenStdoutThrows } from './support/stdoutThrows.js'

// `hourglass demo --serve` stopped on Ctrl-C by dropping every connection:
// a curl still waiting for its answer got an empty reply (curl exit 52).
// It now drains: the chains stop taking connections, a request in flight
// gets its answer, then the servers close. main() runs in this process; the
// signal is emitted to it as Node delivers one.

// SIGHUP as SIGINT: a terminal closed under `demo --serve` (or a process
// manager's HUP) killed it at once, with a request in flight dropped, where
// the gateway drains on the same signal.
it.each([
  ['Ctrl-C', 'SIGINT'],
  ['a hang-up', 'SIGHUP'],
] as const)(
  '%s during a request: the request in flight is answered, then the demo exits 0',
  async (_, signal) => {
    let banner = ''
    let up = () => {}
    const bannerPrinted = new Promise<void>((resolve) => {
      up = resolve
    })
    const exit = main(['demo', '--serve'], {
      stdout: (text) => {
        banner += text
        if (banner.includes('Ctrl-C to stop')) up()
      },
      stderr: () => {},
      stderrIsTTY: false,
    })
    await bannerPrinted
    const edge = new URL(/toolkit chain: (\S+)/.exec(banner)![1]!)
    const body = JSON.stringify({ question: 'why?' })
    const socket = connect(Number(edge.port), edge.hostname)
    let answer = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk))
    // A reset is what the old stop did: seen as an answer missing, below.
    socket.on('error', () => {})
    const closed = new Promise((resolve) => socket.once('close', resolve))
    // Headers first, with `Expect: 100-continue`: the `100 Continue` proves
    // the edge holds the request before the signal comes; the body follows it.
    socket.write(
      `POST ${edge.pathname} HTTP/1.1\r\nhost: ${edge.host}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nx-deadline-remaining-ms: 2000\r\n` +
        'expect: 100-continue\r\nconnection: close\r\n\r\n',
    )
    while (!answer.includes('100 Continue')) await once(socket, 'data')
    process.emit(signal, signal)
    socket.write(body)
    await closed
    // The signal began a drain (a hang-up unheard left the demo to die by it in the binary).
    expect(banner).toContain('stopping…')
    // The answer the chain gives (on time, or its 504 by the deadline), not a dropped connection.
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 (200|504) /)
    expect(await exit).toBe(0)
  },
)

// An io.stdout that throws on the banner (a caller writing to a stream it
// has closed, an EPIPE) failed the command with exit 1 and left both chains
// listening — nobody had a handle to close them — and the demo's SIGINT,
// SIGTERM and SIGHUP listeners on the caller's process, which a SIGTERM no
// longer ended. The command closes what it started before it fails.
it('an io.stdout that throws on the banner leaves nothing running', async () => {
  await expectNothingLeftWhenStdoutThrows(['demo', '--serve'])
})

// The binary's own paths: it holds from its first line (holdStartupSignals),
// so the demo decides what a second signal does to the process. Run here as
// the binary runs them, with process.exit, process.kill and
// removeAllListeners stubbed (the worker's own listeners stay).
describe('in the binary, a second signal during the drain', () => {
  // The next files in this worker run main() as a library: not the binary.
  afterAll(forgetStartupSignals)
  let exit: MockInstance<typeof process.exit>
  let kill: MockInstance<typeof process.kill>
  let removeAllListeners: MockInstance<typeof process.removeAllListeners>
  let running: Promise<number> | undefined
  let stopped = () => false

  beforeEach(() => {
    exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never)
    kill = vi.spyOn(process, 'kill').mockImplementation(() => true)
    removeAllListeners = vi.spyOn(process, 'removeAllListeners').mockImplementation(() => process)
  })

  // A test that failed half-way must not leave the chains up and the demo's
  // listeners on this worker's signals (the next files run in this process):
  // stopped here, with the stubs still in place, and waited for.
  afterEach(async () => {
    const demo = running
    running = undefined
    if (demo === undefined) return
    if (!stopped()) process.emit('SIGTERM', 'SIGTERM')
    await demo.catch(() => {})
    releaseStartupSignals({ redeliver: false })
  })

  /** `hourglass demo --serve` as the binary runs it, once its banner is out. */
  async function serveInTheBinary() {
    holdStartupSignals()
    let output = ''
    const waiting: { text: string; seen: () => void }[] = []
    const code = main(['demo', '--serve'], {
      stdout: (text) => {
        output += text
        for (const wait of waiting) if (output.includes(wait.text)) wait.seen()
      },
      stderr: () => {},
      stderrIsTTY: false,
    })
    running = code
    stopped = () => output.includes('stopping…')
    const printed = (text: string) =>
      Promise.race([
        new Promise<void>((seen) => {
          if (output.includes(text)) seen()
          else waiting.push({ text, seen })
        }),
        // Ended first: that failure, not a wait for a line that never comes.
        code.then((exitCode) => {
          if (!output.includes(text))
            throw new Error(`ended (${exitCode}) before "${text}": ${output}`)
        }),
      ])
    await printed('Ctrl-C to stop')
    return { code, printed }
  }

  it('a second SIGHUP (a closed terminal sends two) is no stop: the drain ends, and then the binary ends by SIGHUP', async () => {
    const demo = await serveInTheBinary()
    process.emit('SIGHUP', 'SIGHUP')
    await demo.printed('stopping…')
    process.emit('SIGHUP', 'SIGHUP')
    expect(await demo.code).toBe(0)
    expect(exit).not.toHaveBeenCalled()
    expect(kill).not.toHaveBeenCalled()
    // What bin.ts ends by once the output is flushed (129 in a shell).
    expect(signalToEndBy()).toBe('SIGHUP')
  })

  it('a SIGINT after a SIGHUP ends by its default action (its listeners gone), not process.exit, which resets the hung-up tty', async () => {
    const demo = await serveInTheBinary()
    process.emit('SIGHUP', 'SIGHUP')
    await demo.printed('stopping…')
    process.emit('SIGINT', 'SIGINT')
    expect(kill).toHaveBeenCalledWith(process.pid, 'SIGINT')
    const killedAt = kill.mock.invocationCallOrder[0]!
    for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
      const removedAt = removeAllListeners.mock.calls.findIndex(([event]) => event === name)
      expect(removedAt, `${name}'s listeners removed`).toBeGreaterThanOrEqual(0)
      expect(removeAllListeners.mock.invocationCallOrder[removedAt]!).toBeLessThan(killedAt)
    }
    expect(killedAt).toBeLessThan(exit.mock.invocationCallOrder[0] ?? Number.POSITIVE_INFINITY)
    await demo.code
  })

  it('a second SIGINT exits at once with 130, by process.exit: no hang-up, the terminal is there', async () => {
    const demo = await serveInTheBinary()
    process.emit('SIGINT', 'SIGINT')
    await demo.printed('stopping…')
    process.emit('SIGINT', 'SIGINT')
    expect(exit).toHaveBeenCalledWith(130)
    expect(kill).not.toHaveBeenCalled()
    expect(signalToEndBy()).toBeUndefined()
    await demo.code
  })
})
