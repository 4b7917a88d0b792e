import type { GatewayRedisClient } from './GatewayRedisClient.js'

/**
 * What `status` reads while the cooldowns' last Redis command went
 * unanswered: anything but `ready` counts locally. The limits' warning
 * writes it as the client's state ("Redis unavailable (the client is …)"):
 * a phrase, not a marker — `cooldowns-unanswered` read as a state of
 * ioredis's that no operator could look up.
 */
export const COOLDOWNS_UNANSWERED = 'silent: its last cooldown read went unanswered'

/**
 * The Redis client as the limits (`ProviderLimits`) see it: the gateway's
 * one client, whose `status` also reads not ready (`COOLDOWNS_UNANSWERED`)
 * while the cooldown store's last command went unanswered (timed out).
 *
 * Admission asks Redis two things in turn for every request: its cooldowns,
 * then its limit count, each with its own back-off after a failure. On a
 * Redis that has just frozen, the first request waited out the cooldown
 * read's `commandTimeoutMs` and then the limit count's as well — twice the
 * documented bound — because the limits had not failed yet. Redis has just
 * not answered on this same connection: the count decides locally at once
 * (rate-limiter-flexible's `rejectIfRedisNotReady`), and the limits follow
 * the cooldowns back to Redis as soon as a cooldown command settles
 * otherwise (one per back-off asks). Only silence counts: a cooldown
 * command Redis refused says nothing of the limits' script, which is
 * still sent. Nothing is sent to a Redis known to be silent, so no count
 * lands there late either, after it thaws.
 *
 * Only `status` differs: the scripts go to the client as they are, and
 * nothing is defined on it.
 */
export class LimitsRedisClient implements GatewayRedisClient {
  readonly #client: GatewayRedisClient
  readonly #cooldownsUnanswered: () => boolean

  constructor(client: GatewayRedisClient, cooldownsUnanswered: () => boolean) {
    this.#client = client
    this.#cooldownsUnanswered = cooldownsUnanswered
  }

  get status(): string {
    const status = this.#client.status
    // Only a `ready` client is changed: the limits read the others (a first
    // connection still coming up, a lost one) themselves.
    return status === 'ready' && this.#cooldownsUnanswered() ? COOLDOWNS_UNANSWERED : status
  }

  evalsha(sha1: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.#client.evalsha(sha1, numKeys, ...args)
  }

  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    return this.#client.eval(script, numKeys, ...args)
  }
}
