import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createFetch } from '@hourglass/fetch'
import { faultServer } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { main } from '../src/index.js'

// `hourglass probe`'s progress counted every @hourglass/fetch attempt that
// ended anywhere in the process (it listened on the global attempt-end
// channel): another probe's calls, or the app's own requests beside
// `main(['probe', …])`, drew dots on its line and ended it early. Here a
// probe whose first call is held sees a second probe (3 calls) and a plain
// fetch finish: it had 4 dots before any of its own calls ended, its line
// ended after the second ("..\n.."), then 2 dots more after it.

function capture() {
  const run = { stdout: '', stderr: '' }
  const io = {
    stdout: (text: string) => {
      run.stdout += text
    },
    stderr: (text: string) => {
      run.stderr += text
    },
    stderrIsTTY: false,
  }
  return { run, io }
}

it("a probe's progress counts its own calls only, not another probe's nor the app's fetches", async () => {
  // A: its first request is held until the others are done.
  const held: ServerResponse[] = []
  const slow = createServer((_req, res) => {
    if (held.length === 0) held.push(res)
    else res.end('ok')
  })
  slow.listen(0, '127.0.0.1')
  await once(slow, 'listening')
  const other = await faultServer({ type: 'respond', body: 'ok' })
  const fetch = createFetch()
  try {
    const slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`
    const a = capture()
    const probing = main(['probe', slowUrl, '--warmup', '0', '--samples', '2'], a.io)
    await once(slow, 'request')

    const b = capture()
    expect(await main(['probe', other.url, '--warmup', '1', '--samples', '2'], b.io)).toBe(0)
    expect(b.run.stderr).toBe(`probing ${new URL(other.url).href} (1 warm-up, 2 measured) ...\n`)
    const res = await fetch(other.url)
    await res.text()
    // Nothing of A's has ended yet: no dot on its line.
    expect(a.run.stderr).toBe(`probing ${slowUrl} (0 warm-up, 2 measured) `)

    held[0]!.end('ok')
    expect(await probing, a.run.stderr).toBe(0)
    expect(a.run.stderr).toBe(`probing ${slowUrl} (0 warm-up, 2 measured) ..\n`)
    expect(a.run.stdout).toMatch(/^2 samples of /)
  } finally {
    await fetch.close()
    await other.close()
    slow.closeAllConnections()
    slow.close()
  }
})

it('on a terminal, the progress line is drawn before the first call ends, not after it', async () => {
  // A slow endpoint (or one that hangs, up to 3 × --budget) left a terminal
  // blank until its first call had ended; off one, the line starts at once.
  const held: ServerResponse[] = []
  const slow = createServer((_req, res) => {
    if (held.length === 0) held.push(res)
    else res.end('ok')
  })
  slow.listen(0, '127.0.0.1')
  await once(slow, 'listening')
  try {
    const host = `127.0.0.1:${(slow.address() as AddressInfo).port}`
    for (const [warmup, firstStage] of [
      ['1', 'warming up 0/1'],
      ['0', 'sampling 0/1'],
    ] as const) {
      held.length = 0
      const writes: string[] = []
      const io = {
        stdout: () => {},
        stderr: (text: string) => void writes.push(text),
        stderrIsTTY: true,
        stderrColumns: () => 80,
      }
      const probing = main(['probe', `http://${host}/`, '--warmup', warmup, '--samples', '1'], io)
      await once(slow, 'request')
      expect(writes).toEqual([`\rprobing ${host}: ${firstStage}`])
      held[0]!.end('ok')
      expect(await probing).toBe(0)
    }
  } finally {
    slow.closeAllConnections()
    slow.close()
  }
})
