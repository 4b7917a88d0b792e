import { once } from 'node:events'
import { connect } from 'node:net'
import { expect, it } from 'vitest'
import { main } from '../src/index.js'

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
