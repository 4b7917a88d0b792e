import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import OpenAI from 'openai'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { assertBuilt, hourglassBin, repoRoot, runNode } from './runNode.js'

let dir: string
let fake: FakeProvider | undefined
beforeEach(async () => {
  assertBuilt()
  dir = await mkdtemp(join(tmpdir(), 'hourglass-gateway-'))
})
afterEach(async () => {
  await fake?.close()
  fake = undefined
  await rm(dir, { recursive: true, force: true })
})

async function writeConfig(config: unknown): Promise<string> {
  const file = join(dir, 'gateway.json')
  await writeFile(file, JSON.stringify(config))
  return file
}

describe('hourglass gateway', () => {
  it('rejects a config with a typo, naming the field, and exits 2 without a stack trace', async () => {
    const file = await writeConfig({
      providers: { p: { dialect: 'openai', baseUrl: 'http://127.0.0.1:1/v1', apiKeys: ['k'] } },
      models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
    })
    const run = await runNode([hourglassBin, 'gateway', '--config', file, '--port', '0'], {
      killAfterMs: 20_000,
    })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('providers.p')
    expect(run.stderr).toMatch(/baseUrl|baseURL/)
    expect(run.stderr).not.toMatch(/\n\s+at /)
  })

  it('serves the official openai client from a config file, then exits 0 on SIGTERM', async () => {
    fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('你好, gateway 👋') })
    const file = await writeConfig({
      providers: {
        fake: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['sk-cli-test-key'] },
      },
      models: { small: { fallback: [{ provider: 'fake', model: 'fake-model' }] } },
    })
    const child = spawn(
      process.execPath,
      [hourglassBin, 'gateway', '--config', file, '--port', '0'],
      {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.stdout.setEncoding('utf8')
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
    try {
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
      const completion = await client.chat.completions.create({
        model: 'small',
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect(completion.choices[0]?.message.content).toBe('你好, gateway 👋')
      expect(fake.requests).toHaveLength(1)
    } finally {
      const exited = once(child, 'exit')
      child.kill('SIGTERM')
      const [code] = await exited
      expect(code).toBe(0)
    }
    expect(stderr).not.toContain('sk-cli-test-key')
  })
})
