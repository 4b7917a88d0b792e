import diagnostics from 'node:diagnostics_channel'

/**
 * One diagnostics channel and the type of the messages published on it.
 * Each package declares its own (the publisher owns its events); subscribers
 * such as @hourglass/otel take `name` from the package's exported `channels`
 * instead of retyping it.
 */
export interface HourglassChannel<T> {
  readonly name: string
  /** True while somebody listens: build nothing otherwise. */
  readonly hasSubscribers: boolean
  /** Build the message and publish it — only when somebody listens (no subscriber, no cost). */
  publish(build: () => T): void
  subscribe(listener: (message: T) => void): void
  unsubscribe(listener: (message: T) => void): void
}

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
