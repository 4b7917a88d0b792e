import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runMain } from './runMain.js'
import { assertBuilt, hourglassBin, repoRoot } from './runNode.js'

let dir: string
beforeEach(async () => {
  assertBuilt()
  dir = await mkdtemp(join(tmpdir(), 'hourglass-gateway-keepalive-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function writeConfig(): Promise<string> {
  const file = join(dir, 'gateway.json')
  await writeFile(
    file,
    JSON.stringify({
      providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
      models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
    }),
  )
  return file
}

/** The Keep-Alive header of `/healthz` from `hourglass gateway` run with `flags`. */
async function keepAliveHeader(flags: string[]): Promise<string | undefined> {
  const file = await writeConfig()
  const child = spawn(
    process.execPath,
    [hourglassBin, 'gateway', '--config', file, '--port', '0', ...flags],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  child.stdout.setEncoding('utf8')
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (chunk: string) => {
        out += chunk
        const match = /listening on (http:\/\/\S+)\/v1/.exec(out)
        if (match?.[1]) resolve(match[1])
      })
      child.once('exit', (code) =>
        reject(new Error(`gateway exited ${code} before listening: ${stderr}`)),
      )
    })
    const agent = new Agent({ keepAlive: true })
    try {
      return await new Promise<string | undefined>((resolve, reject) => {
        const req = request(`${url}/healthz`, { agent }, (res) => {
          res.resume()
          res.on('end', () => resolve(res.headers['keep-alive'] as string | undefined))
        })
        req.on('error', reject)
        req.end()
      })
    } finally {
      agent.destroy()
    }
  } finally {
    child.kill('SIGTERM')
    await exited
  }
}

describe('hourglass gateway --keep-alive-timeout-ms', () => {
  it('keeps idle connections 65 s by default, longer than a load balancer (before: Node’s 5 s)', async () => {
    expect(await keepAliveHeader([])).toBe('timeout=65')
  })

  it('keeps them as long as the flag says', async () => {
    expect(await keepAliveHeader(['--keep-alive-timeout-ms', '620000'])).toBe('timeout=620')
  })

  it.each(['0', '-5', 'soon', '86400001'])('refuses %s as a usage error', async (value) => {
    const run = await runMain(['gateway', '--config', 'x.json', '--keep-alive-timeout-ms', value])
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(
      /^hourglass gateway: --keep-alive-timeout-ms must be a whole number from 1 to 86400000, got /,
    )
  })
})
