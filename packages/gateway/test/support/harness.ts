import { type FakeProvider, type ProviderDialect, startFakeProvider } from '@hourglass/testkit'
import OpenAI from 'openai'
import type { LogRecord, StartGatewayOptions } from '../../src/index.js'
import { type RunningGateway, startGateway } from '../../src/index.js'

export interface Harness {
  url: string
  client: OpenAI
  /** Every record the gateway logged, in order. */
  logs: LogRecord[]
  running: RunningGateway
  close(): Promise<void>
}

/**
 * A gateway on a real port with its log collected, and the official OpenAI
 * client pointed at it by `baseURL` — the way a user switches to it. The
 * client's own retries are off so a test sees exactly what the gateway answered.
 */
export async function startHarness(
  config: unknown,
  options: Omit<StartGatewayOptions, 'config'> = {},
): Promise<Harness> {
  const logs: LogRecord[] = []
  const running = await startGateway({
    config,
    port: 0,
    logger: (record) => logs.push(record),
    ...options,
  })
  const client = new OpenAI({ baseURL: `${running.url}/v1`, apiKey: 'x', maxRetries: 0 })
  return {
    url: running.url,
    client,
    logs,
    running,
    close: async () => {
      await running.close()
    },
  }
}

/** A fake provider and the config entry pointing at it. */
export async function fakeProvider(
  dialect: ProviderDialect,
  apiKeys: string[],
  extra: Record<string, unknown> = {},
): Promise<{ fake: FakeProvider; entry: Record<string, unknown> }> {
  const fake = await startFakeProvider({ dialect })
  return { fake, entry: { dialect, baseURL: fake.baseURL, apiKeys, ...extra } }
}

/** A model entry that tries `targets` in order. */
export function fallback(...targets: Array<[provider: string, model: string]>) {
  return { fallback: targets.map(([provider, model]) => ({ provider, model })) }
}
