import { escapeId } from '@hourglass/core'
import { z } from 'zod'
import { unexpandedVariable } from './unexpandedVariable.js'

export type Env = Readonly<Record<string, string | undefined>>

/** `{ "env": NAME }` as written in a config. */
function isEnvRef(value: unknown): value is { env: unknown } {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.hasOwn(value, 'env')
  )
}

/**
 * A string field that may also be written `{ "env": NAME }`: the variable's
 * value is read from `env` and then validated by `inner` like a literal
 * (a `{ env }` baseURL must still be an http(s) URL). A variable that is not
 * set or is empty, or a malformed `{ env }`, is one problem at the field that
 * holds it. A literal holding a shell-style reference (`"${OPENAI_KEY}"`,
 * which nothing expands: `unexpandedVariable`) is one too, naming the
 * `{ "env": NAME }` to write instead.
 * The value itself is never quoted back (it may be a key or a password).
 */
export function envString<T extends z.ZodType>(
  env: Env,
  inner: T,
): z.ZodType<z.output<T>, z.input<T> | { env: string }> {
  return z.preprocess((value, ctx) => {
    if (!isEnvRef(value)) {
      const reference = typeof value === 'string' ? unexpandedVariable(value) : undefined
      if (reference === undefined) return value
      // The name alone, as `${NAME}`: a `:-default` or the rest of the value
      // may be a secret.
      ctx.addIssue({
        code: 'custom',
        message: `expected a value, not \${${reference.name}}: the config is plain JSON and nothing expands it (it would be sent as written); read the variable with { "env": "${reference.name}" }`,
      })
      return z.NEVER
    }
    const extra = Object.keys(value).filter((k) => k !== 'env')
    if (typeof value.env !== 'string' || value.env === '' || extra.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message:
          'expected { "env": NAME } with the name of an environment variable, and nothing else',
      })
      return z.NEVER
    }
    // Own variables only: `toString`, `constructor` or `__proto__` would
    // otherwise read Object.prototype's members and be reported as a wrong
    // value instead of an unset variable.
    const resolved = Object.hasOwn(env, value.env) ? env[value.env] : undefined
    if (typeof resolved !== 'string' || resolved === '') {
      // Empty is said apart: `KEY=` in a .env file or a secret not mounted
      // sets the variable, and "not set" would send the operator looking
      // for a name that is there.
      const state = resolved === '' ? 'is empty' : 'is not set'
      // `{ "env": "$KEY" }`, shell syntax: the name is KEY.
      const bare = unexpandedVariable(value.env)
      const hint = bare === undefined ? '' : ` (the name goes alone: { "env": "${bare.name}" })`
      ctx.addIssue({
        code: 'custom',
        // The name escaped (`OPENAI_KEY\n`): a line break in it split the
        // message's line, and the name read as one that is set.
        message: `environment variable ${escapeId(value.env)} ${state}${hint}`,
      })
      return z.NEVER
    }
    // The value as a literal is checked: `OPENAI_KEY=${OPENAI_KEY_PROD}` in a
    // file `docker run --env-file` or systemd reads (neither expands it).
    // Passed here, it was refused by `createGateway` re-validating the
    // loaded config, as a literal, telling the operator to write the
    // `{ "env": … }` they had written.
    const inside = unexpandedVariable(resolved)
    if (inside !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `environment variable ${escapeId(value.env)} holds \${${inside.name}}, which nothing expanded (it would be sent as written: an env file read by \`docker run --env-file\` or systemd is not expanded); set it to the value itself`,
      })
      return z.NEVER
    }
    return resolved
  }, inner) as unknown as z.ZodType<z.output<T>, z.input<T> | { env: string }>
}
