import diagnostics from 'node:diagnostics_channel'

/**
 * One diagnostics channel and the type of the messages published on it.
 * Each package declares its own (the publisher owns its events); subscribers
 * such as @hourglass/otel take them from the package's channel group (see
 * `defineChannels`) instead of retyping names. The methods are closures: they
 * may be passed around unbound.
 */
export interface HourglassChannel<T> {
  readonly name: `hourglass:${string}`
  /** True while somebody listens: build nothing otherwise. */
  readonly hasSubscribers: boolean
  /**
   * Build the message and publish it — only when somebody listens (no
   * subscriber, no cost but the closure; a per-request path may check
   * `hasSubscribers` first to skip even that).
   */
  publish(build: () => T): void
  subscribe(listener: (message: T) => void): void
  unsubscribe(listener: (message: T) => void): void
}

/** The message type of a channel: `ChannelMessage<typeof fetchChannels.attempt>`. */
export type ChannelMessage<C> = C extends HourglassChannel<infer T> ? T : never

/**
 * Declare a channel. Names follow `hourglass:<area>:<event>`. The message
 * type is a phantom: it documents and checks, it costs nothing at run time.
 */
export function defineChannel<T>(name: `hourglass:${string}`): HourglassChannel<T> {
  const channel = diagnostics.channel(name)
  return {
    name,
    get hasSubscribers() {
      return channel.hasSubscribers
    },
    publish(build) {
      if (channel.hasSubscribers) channel.publish(build())
    },
    subscribe(listener) {
      diagnostics.subscribe(name, listener as (message: unknown, name: string | symbol) => void)
    },
    unsubscribe(listener) {
      diagnostics.unsubscribe(name, listener as (message: unknown, name: string | symbol) => void)
    },
  }
}

/**
 * Every package's channels, by group name. Empty here: each publisher adds its
 * entry by declaration merging, next to its `defineChannels` call, so
 * `onChannels('fetch', (c) => c.attempt.subscribe(…))` is typed and a renamed
 * channel is a compile error in every subscriber:
 *
 * ```ts
 * declare module '@hourglass/core' {
 *   interface ChannelGroups { fetch: typeof fetchChannels }
 * }
 * ```
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by each publisher's declaration merging
export interface ChannelGroups {}

type AnyChannels = Readonly<Record<string, HourglassChannel<unknown>>>

/**
 * Kept on `globalThis` under a `Symbol.for` key, so two installed copies of
 * core (a package that bundles its own) share one registry — diagnostics
 * channels are process-wide by name, the registry that finds them is too.
 * The shape is a contract between copies: change it only with a new key.
 */
interface Registry {
  readonly groups: Map<string, AnyChannels>
  readonly waiting: Map<string, Set<(channels: AnyChannels) => void>>
}

const REGISTRY = Symbol.for('@hourglass/core.channelGroups.v1')
const registry = sharedRegistry()

function sharedRegistry(): Registry {
  const holder = globalThis as { [REGISTRY]?: Registry }
  const existing = holder[REGISTRY]
  if (existing) return existing
  const created: Registry = { groups: new Map(), waiting: new Map() }
  holder[REGISTRY] = created
  return created
}

/**
 * Declare a package's channels as one group and make them findable by
 * `onChannels(group, …)` — by a subscriber that cannot import the package
 * (@hourglass/otel depends on core only). Returns `channels`, frozen.
 *
 * The first registration of a group stands: a second copy of the same package
 * publishes on the same names, hence the same diagnostics channels, so its
 * subscribers are already listening.
 */
export function defineChannels<C extends Record<string, HourglassChannel<unknown>>>(
  group: string,
  channels: C,
): Readonly<C> {
  const frozen = Object.freeze(channels)
  if (registry.groups.has(group)) return frozen
  registry.groups.set(group, frozen)
  const listeners = registry.waiting.get(group)
  registry.waiting.delete(group)
  for (const listener of listeners ?? []) {
    try {
      listener(frozen)
    } catch (error) {
      // Registration runs while the publisher's module loads: a subscriber's
      // bug must not fail that import. Rethrown on the next tick, as
      // diagnostics_channel does with a throwing subscriber.
      process.nextTick(() => {
        throw error
      })
    }
  }
  return frozen
}

/**
 * Call `listener` with a group's channels: at once if the group is already
 * defined, else when its package is loaded (never, if it never is). Returns a
 * function that cancels a pending call; it cannot undo subscriptions the
 * listener made — unsubscribe those yourself.
 */
export function onChannels<G extends keyof ChannelGroups>(
  group: G,
  listener: (channels: ChannelGroups[G]) => void,
): () => void {
  const registered = registry.groups.get(group)
  if (registered) {
    listener(registered as ChannelGroups[G])
    return () => {}
  }
  // A wrapper per call: the same function registered twice is two listeners.
  const pending = (channels: AnyChannels) => listener(channels as ChannelGroups[G])
  let waiting = registry.waiting.get(group)
  if (!waiting) {
    waiting = new Set()
    registry.waiting.set(group, waiting)
  }
  waiting.add(pending)
  return () => {
    const current = registry.waiting.get(group)
    if (!current?.delete(pending)) return
    if (current.size === 0) registry.waiting.delete(group)
  }
}
