import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach } from 'vitest'

/**
 * `writeConfig()`: the path of a valid gateway config (one fake provider,
 * one model) in a fresh folder, removed after the test.
 */
export function useGatewayConfig(): () => string {
  let dir: string | undefined
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
    dir = undefined
  })
  return function writeConfig() {
    dir = mkdtempSync(join(tmpdir(), 'hourglass-cli-'))
    const config = join(dir, 'gateway.json')
    writeFileSync(
      config,
      JSON.stringify({
        providers: {
          fake: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] },
        },
        models: { small: { fallback: [{ provider: 'fake', model: 'm' }] } },
      }),
    )
    return config
  }
}
