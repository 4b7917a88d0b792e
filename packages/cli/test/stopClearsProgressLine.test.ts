import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it, vi } from 'vitest'
import type { Io } from '../src/Command.js'
import { exitOnStopSignals } from '../src/exitOnStopSignals.js'
import { main } from '../src/main.js'
import { progressLine } from '../src/progressLine.js'
import { signalsAsBinary } from './support/signalsAsBinary.js'

// Ctrl-C during `hourglass demo` or `probe` in a terminal ended the process
// with its progress line still drawn ("sending the same traffic through both
// chains: 49/60 answered or given up"), the shell's prompt or its `^C` then
// written over or after that half line. The line is now cleared before the
// signal ends the process. Signals are emitted in this process, with
// `process.kill` and `process.exit` stubbed, as the binary (which holds from
// its first line) runs it; the terminal is a fake one (`stderrIsTTY`).

signalsAsBinary()

afterEach(() => {
  for (const name of ['SIGINT', 'SIGTERM'] as const) {
    for (const listener of process.listeners(name)) {
      if (!before[name].includes(listener)) process.off(name, listener)
    }
  }
})

const before = {
  SIGINT: process.listeners('SIGINT'),
  SIGTERM: process.listeners('SIGTERM'),
}

/** A terminal: each write to stderr, and when the process was told to end, in one log. */
function terminal() {
  const log: string[] = []
  const io: Io = {
    stdout: () => {},
    stderr: (text) => log.push(text),
    stderrIsTTY: true,
    stderrColumns: () => 80,
  }
  vi.spyOn(process, 'kill').mockImplementation(((_pid: number, signal: string) => {
    log.push(`<kill ${signal}>`)
    return true
  }) as never)
  vi.spyOn(process, 'exit').mockImplementation(((code: number) => {
    log.push(`<exit ${code}>`)
  }) as never)
  return { io, log }
}

it.each(['SIGINT', 'SIGTERM'] as const)(
  'a %s clears a progress line drawn on a terminal before it ends the process',
  (signal) => {
    const { io, log } = terminal()
    exitOnStopSignals()
    const line = progressLine(io)
    line.update('sending the same traffic through both chains: 49/60 answered or given up')
    process.emit(signal, signal)
    const kill = log.indexOf(`<kill ${signal}>`)
    expect(kill).toBeGreaterThan(0)
    expect(log[kill - 1]).toBe(`\r${' '.repeat(72)}\r`)
  },
)

it('a line cleared already, or never drawn, writes nothing more', () => {
  const { io, log } = terminal()
  exitOnStopSignals()
  const cleared = progressLine(io)
  cleared.update('probing x: sampling 1/10')
  cleared.clear()
  progressLine(io)
  const written = log.length
  process.emit('SIGINT', 'SIGINT')
  expect(log.slice(written)).toEqual(['<kill SIGINT>', '<exit 130>'])
})

it('Ctrl-C during `hourglass probe` on a terminal clears its progress line first', async () => {
  const { io, log } = terminal()
  // The line drawn: "warming up 1/3", with the second call held until the signal came.
  let drawn!: () => void
  const warmingUp = new Promise<void>((resolve) => {
    drawn = resolve
  })
  const write = io.stderr
  io.stderr = (text) => {
    write(text)
    if (text.includes('warming up 1/3')) drawn()
  }
  let calls = 0
  let held: ServerResponse | undefined
  const server = createServer((_req, res) => {
    calls++
    if (calls === 2) held = res
    else res.end('ok')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    const run = main(['probe', url, '--samples', '1', '--budget', '5000'], io)
    await warmingUp
    process.emit('SIGINT', 'SIGINT')
    const kill = log.indexOf('<kill SIGINT>')
    expect(kill).toBeGreaterThan(0)
    expect(log[kill - 1]).toMatch(/^\r {10,}\r$/)
    // The probe goes on (process.kill and exit are stubs): let it end.
    if (held === undefined) await once(server, 'request')
    held!.end('ok')
    await run
  } finally {
    server.closeAllConnections()
    server.close()
  }
})

// Off a terminal, `probe` writes one dot per call on one line ("probing … ...")
// and ends it with the last call. A SIGTERM from a supervisor (or SIGINT)
// before that left the line open: the log's next line, whoever wrote it,
// was glued to the dots. The stop now ends the line first.

/** Captured stderr (a pipe, a log file): each write, and when the process was told to end. */
function logFile() {
  const { io, log } = terminal()
  return { io: { ...io, stderrIsTTY: false }, log }
}

it.each(['SIGINT', 'SIGTERM'] as const)(
  'a %s ends a progress line appended to off a terminal before it ends the process',
  (signal) => {
    const { io, log } = logFile()
    exitOnStopSignals()
    const line = progressLine(io)
    line.append('probing http://x/ (0 warm-up, 10 measured) ')
    line.append('.')
    process.emit(signal, signal)
    expect(log).toEqual([
      'probing http://x/ (0 warm-up, 10 measured) ',
      '.',
      '\n',
      `<kill ${signal}>`,
      `<exit ${signal === 'SIGINT' ? 130 : 143}>`,
    ])
  },
)

it('a line appended to and ended already writes nothing more at a stop', () => {
  const { io, log } = logFile()
  exitOnStopSignals()
  const line = progressLine(io)
  line.append('probing http://x/ (0 warm-up, 1 measured) ')
  line.append('.\n')
  process.emit('SIGTERM', 'SIGTERM')
  expect(log).toEqual([
    'probing http://x/ (0 warm-up, 1 measured) ',
    '.\n',
    '<kill SIGTERM>',
    '<exit 143>',
  ])
})

it('SIGTERM during `hourglass probe` with stderr piped ends its line of dots first', async () => {
  const { io, log } = logFile()
  let firstDot!: () => void
  const dotted = new Promise<void>((resolve) => {
    firstDot = resolve
  })
  const write = io.stderr
  io.stderr = (text) => {
    write(text)
    if (text === '.') firstDot()
  }
  let calls = 0
  let held: ServerResponse | undefined
  const server = createServer((_req, res) => {
    calls++
    if (calls === 2) held = res
    else res.end('ok')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    const run = main(['probe', url, '--samples', '1', '--budget', '5000'], io)
    await dotted
    process.emit('SIGTERM', 'SIGTERM')
    const kill = log.indexOf('<kill SIGTERM>')
    expect(log.slice(0, kill)).toEqual([`probing ${url} (3 warm-up, 1 measured) `, '.', '\n'])
    // The probe goes on (process.kill and exit are stubs): let it end.
    if (held === undefined) await once(server, 'request')
    held!.end('ok')
    await run
  } finally {
    server.closeAllConnections()
    server.close()
  }
})
