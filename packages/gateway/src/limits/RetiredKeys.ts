import type { ChannelMessage } from '@hourglass/core'
import { currentRequest } from '../http/requestScope.js'
import { keyId, llmChannels } from '../llm.js'

/** A provider (or one of its models) with no key left: every key retired. */
export interface KeysRetired {
  provider: string
  /** Set when the keys are retired for this model only (a quota naming it). */
  model?: string
}

/** How many keys of a provider are retired: for every model (`key`), or for `model` only. */
export interface RetiredCount {
  provider: string
  scope: 'key' | 'model'
  model?: string
  count: number
}

/**
 * The keys this gateway's admission retired (a 401, a quota gone for good):
 * until restart, nothing is sent with them, and a provider whose every key
 * is retired answers no request. `/readyz` stays 200 then — the keys are
 * usually shared by the whole fleet, whose every instance would turn
 * unready at once, as for Redis — so this is what says it: the `/readyz`
 * body and the `retired_keys` gauge. Read from llm's cooldown events (a
 * `start` whose reason is `retired: …`), counted only for this gateway's
 * requests; a retirement is never lifted by an event (admission's default
 * `retireMs`, until restart, which the gateway keeps).
 */
export class RetiredKeys {
  readonly #owner: object
  /** provider → its key ids (a provider without keys: llm's one no-key id). */
  readonly #keys = new Map<string, ReadonlySet<string>>()
  /** provider → model ('' for every model) → retired key ids. */
  readonly #retired = new Map<string, Map<string, Set<string>>>()
  readonly #unsubscribe: () => void

  constructor(owner: object, providers: Readonly<Record<string, { apiKeys: readonly string[] }>>) {
    this.#owner = owner
    for (const [name, p] of Object.entries(providers)) {
      this.#keys.set(
        name,
        new Set(p.apiKeys.length === 0 ? [keyId(undefined)] : p.apiKeys.map(keyId)),
      )
    }
    const onCooldown = (m: ChannelMessage<typeof llmChannels.cooldown>) => {
      if (m.state !== 'start' || !m.reason.startsWith('retired:')) return
      if (currentRequest()?.owner !== this.#owner || !this.#keys.has(m.provider)) return
      let models = this.#retired.get(m.provider)
      if (models === undefined) {
        models = new Map()
        this.#retired.set(m.provider, models)
      }
      const model = m.scope === 'model' ? (m.model ?? '') : ''
      let ids = models.get(model)
      if (ids === undefined) {
        ids = new Set()
        models.set(model, ids)
      }
      ids.add(m.keyId)
    }
    llmChannels.cooldown.subscribe(onCooldown)
    this.#unsubscribe = () => llmChannels.cooldown.unsubscribe(onCooldown)
  }

  /** Each provider's retired keys: its `key` count always (0 too), a model's when it has any. */
  counts(): RetiredCount[] {
    const out: RetiredCount[] = []
    for (const provider of this.#keys.keys()) {
      const models = this.#retired.get(provider)
      out.push({ provider, scope: 'key', count: models?.get('')?.size ?? 0 })
      for (const [model, ids] of models ?? []) {
        if (model !== '') out.push({ provider, scope: 'model', model, count: ids.size })
      }
    }
    return out
  }

  /**
   * The providers whose every key is retired, and the models of the others
   * whose every key is retired for them (by the model's quota, or the key's own).
   */
  exhausted(): KeysRetired[] {
    const out: KeysRetired[] = []
    for (const [provider, models] of this.#retired) {
      const keys = this.#keys.get(provider) as ReadonlySet<string>
      const everyModel = models.get('') ?? new Set<string>()
      if (covers(keys, everyModel)) {
        out.push({ provider })
        continue
      }
      for (const [model, ids] of models) {
        if (model !== '' && covers(keys, new Set([...everyModel, ...ids]))) {
          out.push({ provider, model })
        }
      }
    }
    return out
  }

  close(): void {
    this.#unsubscribe()
  }
}

function covers(keys: ReadonlySet<string>, retired: ReadonlySet<string>): boolean {
  for (const id of keys) if (!retired.has(id)) return false
  return true
}
