import { dialects } from '../llm.js'

/**
 * The names the gateway shows anyway: a dialect's, and the config's
 * provider, model and alias names (each answer's `x-hourglass-provider`,
 * `GET /v1/models`, metric labels). A configured key or header value that
 * is one of them is no secret (Ollama's documented key is `ollama`, the
 * name its provider is given), and is not scrubbed: scrubbed, the word went
 * from every string — the request and attempt lines of a provider so named
 * said `provider: "[redacted]"`, and its clients' errors `no provider could
 * answer ([redacted]/llama3: …)`.
 *
 * Each is an object key of the config or a constant, written in the config
 * file itself. Not an upstream model name (a target's `model`): it may come
 * from `{ "env": NAME }` as a key does, and is shown only because it is not
 * a secret — a key that equals one is the same variable read twice (`"model":
 * { "env": "AZURE_KEY" }`), and exempted, the key went to every client in
 * `no provider could answer (azure/<key>: not found)` and to the log.
 */
export function publishedNames(config: {
  providers: Readonly<Record<string, unknown>>
  models: Readonly<Record<string, unknown>>
  aliases: Readonly<Record<string, string>>
}): ReadonlySet<string> {
  return new Set<string>([
    ...Object.keys(dialects),
    ...Object.keys(config.providers),
    ...Object.keys(config.models),
    ...Object.keys(config.aliases),
  ])
}
