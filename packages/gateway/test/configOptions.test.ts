import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { loadGatewayConfig, parseGatewayConfig } from '../src/index.js'

const CONFIG = {
  providers: {
    p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: [{ env: 'P_KEY' }] },
  },
  models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
}

/**
 * The options of the config readers were read by name and nothing else:
 * `{ enviroment: { P_KEY: … } }` looked the keys up in `process.env`
 * instead, and failed on a key "not set" that the caller had passed. Refused
 * as the gateway's own options are, naming the key and the one meant.
 */
describe('options the config readers do not read', () => {
  it('parseGatewayConfig refuses an unknown option, naming it and the one meant', () => {
    expect(() => parseGatewayConfig(CONFIG, { env: { P_KEY: 'k' } })).not.toThrow()
    const options = { envs: { P_KEY: 'k' } } as never
    expect(() => parseGatewayConfig(CONFIG, options)).toThrow(
      expect.objectContaining({
        name: 'TypeError',
        code: 'GATEWAY_OPTION_INVALID',
        message: expect.stringMatching(
          /unknown option "envs" \(did you mean env\?\); parseGatewayConfig\(\) takes env, file/,
        ),
      }),
    )
  })

  it('loadGatewayConfig refuses one too, and `file`, which the path replaces', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hourglass-config-'))
    onTestFinished(() => rm(dir, { recursive: true, force: true }))
    const path = join(dir, 'gateway.json')
    await writeFile(path, JSON.stringify(CONFIG))
    await expect(loadGatewayConfig(path, { env: { P_KEY: 'k' } })).resolves.toBeDefined()
    for (const key of ['Env', 'file']) {
      await expect(loadGatewayConfig(path, { [key]: 'x' } as never)).rejects.toThrow(
        expect.objectContaining({
          code: 'GATEWAY_OPTION_INVALID',
          message: expect.stringMatching(
            new RegExp(`unknown option "${key}".*; loadGatewayConfig\\(\\) takes env$`),
          ),
        }),
      )
    }
  })
})
