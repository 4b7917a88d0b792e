import type { Command } from '../Command.js'
import { exitOnStopSignals } from '../exitOnStopSignals.js'
import { intOption, parseCommandArgs } from '../parseCommandArgs.js'
import { printable } from '../printable.js'
import { parseHeader } from '../probe/parseHeader.js'
import { progressLine } from '../progressLine.js'
import { caughtSignalsDelivered, releaseStartupSignals } from '../startupSignals.js'
import { UsageError } from '../UsageError.js'

/**
 * A probe call is abandoned once it has taken this many times `--budget`.
 * Not the budget itself: calls slower than the budget are part of what the
 * probe reports ("headersTimeoutMs … would have cut 2 of 10 samples, which
 * took 400–500 ms"), and every setting it suggests is capped at the budget,
 * so a call three times over it is cut by any of them and waiting longer
 * tells nothing more. Before, only fetch's phase limits bounded a call (10 s
 * for the headers, then 10 s per body chunk), whatever the budget.
 */
export const CALL_TIMEOUT_BUDGETS = 3

export const probeCommand: Command = {
  name: 'probe',
  summary: 'measure an endpoint and suggest its timeouts and slice',
  help: `Usage: hourglass probe <url> [--warmup 3] [--samples 10] [--budget 2000]
                       [--header 'name: value']... [--json] [--allow-errors]

Makes --warmup calls (not measured), then --samples sequential GETs, each on
a fresh connection, and prints median / p90 / max per phase (dns, connect,
headers = time to first byte, body, bodyGap = the longest silence in the
body, which the suggested bodyTimeoutMs covers), a latency histogram, a
warning when p90 ≥ 3 × median (a fixed timeout there is a lottery), and
suggested @hourglass/fetch settings for the budget as JSON ready to paste.
Each setting covers the slowest sample; when the budget caps one below it, a
warning says which share of the samples it would cut. An IP address gets no
DNS limit.
A URL that redirects is refused (exit 1): probe the one it redirects to; so
is one that answers an error status (4xx, 5xx) to every measured call,
unless --allow-errors says that status is what the endpoint answers.
A call that takes ${CALL_TIMEOUT_BUDGETS} × --budget is abandoned and ends the probe (exit 1).

Options:
  --warmup <n>          calls before measuring (default 3; 0 to 1000)
  --samples <n>         calls measured (default 10; 1 to 10000)
  --budget <ms>         the request budget the call must fit in (default 2000)
  -H, --header <h>      'name: value' sent on every call; repeatable (not Host
                        or Content-Length: fetch sets those from the URL)
  --json                print samples, stats and settings as one JSON object
  --allow-errors        measure even when every call answers 4xx/5xx (an
                        endpoint that answers 401 or 404 by design)
  -h, --help            this help
`,
  async run(args, io) {
    // Nothing to drain: a signal ends the probe, from its first moment on,
    // PID 1 in a container included. A signal caught while the binary
    // loaded, still on its way to JavaScript, is held first: released with
    // no listener left (SIGHUP), it would be dropped.
    await caughtSignalsDelivered()
    exitOnStopSignals()
    releaseStartupSignals()
    const { values, positionals } = parseCommandArgs('probe', args, {
      allowPositionals: true,
      options: {
        warmup: { type: 'string' },
        samples: { type: 'string' },
        budget: { type: 'string' },
        header: { type: 'string', short: 'H', multiple: true },
        json: { type: 'boolean' },
        'allow-errors': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    })
    if (values.help) {
      io.stdout(probeCommand.help)
      return 0
    }
    if (positionals.length === 0) {
      throw new UsageError('hourglass probe: missing <url> (see hourglass probe --help)')
    }
    if (positionals.length > 1) throw extraArguments(positionals, values.header ?? [])
    const url = parseUrl(positionals[0]!)
    const warmup = intOption('probe', 'warmup', values.warmup, 3, 0, 1000)
    const samples = intOption('probe', 'samples', values.samples, 10, 1, 10_000)
    const budgetMs = intOption('probe', 'budget', values.budget, 2000, 1)
    const callTimeoutMs = CALL_TIMEOUT_BUDGETS * budgetMs
    const headers = (values.header ?? []).map(parseHeader)
    // fetch refuses a URL with credentials: send them as Basic auth (as curl
    // does, unless a --header says otherwise), and print the URL without them.
    const basic = basicAuth(url)
    if (basic && !headers.some(([name]) => name.toLowerCase() === 'authorization')) {
      headers.push(['authorization', basic])
    }
    const shown = withoutCredentials(url)
    // Loaded only once the arguments hold: undici and the fetch stack are
    // most of the command's start-up, which a bad argument should not wait for.
    const [
      { isProbeRedirect, probe, suggestTimeouts },
      { describeFailure },
      { probeReport },
      { renderProbe },
    ] = await Promise.all([
      import('@hourglass/fetch'),
      import('../probe/describeFailure.js'),
      import('../probe/probeReport.js'),
      import('../probe/renderProbe.js'),
    ])

    const progress = progressLine(io)
    // Warming up from the first call, if any, to the last warm-up ended.
    const stageOf = (done: number) =>
      warmup > 0 && done <= warmup
        ? `warming up ${done}/${warmup}`
        : `sampling ${done - warmup}/${samples}`
    // Calls ended so far: the one a failure cut is the next.
    let ended = 0
    // The probe's own calls, as it reports them: the attempt-end diagnostics
    // event, which this counted before, is every fetch's in the process —
    // another probe's (two run side by side) or the app's around main() —
    // and drew their dots on this line, ending it early.
    const onProgress = ({ done, total }: { done: number; total: number }) => {
      ended = done
      if (io.stderrIsTTY) {
        progress.update(`probing ${url.host}: ${stageOf(done)}`)
      } else {
        progress.append(done === total ? '.\n' : '.')
      }
    }
    progress.append(`probing ${shown} (${warmup} warm-up, ${samples} measured) `)
    // Drawn before the first call, as the line of dots starts before it: a
    // terminal showed nothing until a call had ended — for a slow endpoint,
    // or one that hangs, up to 3 × --budget (6 s by default) of a blank line.
    progress.update(`probing ${url.host}: ${stageOf(0)}`)
    let measured: Awaited<ReturnType<typeof probe>> | undefined
    let failure: unknown
    try {
      measured = await probe(shown, {
        warmup,
        samples,
        callTimeoutMs,
        onProgress,
        ...(headers.length > 0 ? { headers } : {}),
      })
    } catch (error) {
      failure = error
    } finally {
      // Wiped on a terminal; elsewhere the dots' line ended if a failure cut it short.
      progress.clear()
    }
    // probe() refuses a redirect (it would time the last hop alone); a 3xx
    // without a Location is the endpoint's answer, measured as such.
    if (isProbeRedirect(failure)) {
      io.stderr(
        `hourglass probe: ${shown} answered ${failure.status}, a redirect to ${printable(locationShown(failure.location), Number.POSITIVE_INFINITY)}: probe the URL it redirects to (probe times one request; across a redirect it would time the last hop alone)\n`,
      )
      return 1
    }
    if (measured === undefined) {
      io.stderr(
        `hourglass probe: ${describeFailure(failure, url, { budgetMs, callTimeoutMs, call: { done: ended, warmup, samples } })}\n`,
      )
      return 1
    }
    // Every call an error (a 503, a wrong path's 404, a missing header's
    // 401): what was timed is the error path, usually far faster than the
    // work, and settings sized from it would cut the real calls. A failure,
    // said as one, with nothing to paste; some errors among successes are
    // the endpoint as it is, measured (the report notes their statuses).
    // `--allow-errors`: the error is the endpoint's answer (a health check
    // that answers 401 to strangers, a 404 by design), and it is measured.
    const statuses = [...new Set(measured.samples.map((s) => s.status))]
    if (values['allow-errors'] !== true && statuses.every((status) => status >= 400)) {
      const calls =
        measured.samples.length === 1
          ? 'the one call measured'
          : `every one of the ${measured.samples.length} calls measured`
      io.stderr(
        `hourglass probe: ${shown} answered ${statuses.join(' or ')} to ${calls}: the figures would time the error, not the endpoint's work (check the URL, -H headers such as authorization, or the service; --allow-errors to measure it as it is)\n`,
      )
      return 1
    }
    const result = { ...measured, url: shown }
    const suggested = suggestTimeouts(result, budgetMs)
    io.stdout(
      values.json
        ? `${JSON.stringify(probeReport(result, suggested, budgetMs), null, 2)}\n`
        : renderProbe(result, suggested, budgetMs),
    )
    return 0
  },
}

/**
 * More than one argument that is no option. Said as "one <url> expected, got
 * 3", it named neither the stray one nor the likeliest cause: a header the
 * shell split at its blanks (`-H authorization: Bearer $TOKEN`, unquoted),
 * which leaves `authorization:` empty and the credential's words behind the
 * URL. Those words are never quoted back (they are a credential); the
 * header is named, with the fix. With any header given, no stray is quoted
 * (it may be a piece of a value split elsewhere); otherwise the stray
 * argument is quoted, as any unexpected argument is (a password in it
 * hidden, as in a URL).
 */
function extraArguments(positionals: readonly string[], headers: readonly string[]): UsageError {
  const split = headers.find((header) => /^[^:]+:\s*$/.test(header))
  if (split !== undefined) {
    const name = printable(split.slice(0, split.indexOf(':')).trim(), 64)
    return new UsageError(
      `hourglass probe: one <url> expected, got ${positionals.length}, and --header '${name}:' has no value: the shell split the header at its blanks; quote it whole: -H '${name}: …'`,
    )
  }
  // With a header given, the stray may be a piece of its value the shell
  // split off anywhere (`-H authorization:Bearer $TOKEN`, `-H 'x-api-key:
  // abc' def`): never quoted back, whatever it looks like.
  if (headers.length > 0) {
    return new UsageError(
      `hourglass probe: one <url> expected, got ${positionals.length}: if a --header value has blanks, the shell split it; quote it whole: -H 'name: value' (see hourglass probe --help)`,
    )
  }
  // The URL is the first that looks like one; the first other is the stray.
  const url = Math.max(
    0,
    positionals.findIndex((text) => text.includes('://')),
  )
  const stray = positionals.find((_, i) => i !== url)!
  return new UsageError(
    `hourglass probe: one <url> expected, got ${positionals.length}: unexpected argument '${withoutPassword(stray)}' (see hourglass probe --help)`,
  )
}

function parseUrl(text: string): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    refuseMissingScheme(text)
    // `http://host:70000/`: the URL parser's one word for it, "Invalid URL",
    // named for what it is.
    const port = outOfRangePort(text)
    if (port !== undefined) throw badPort(text, port)
    throw new UsageError(
      `hourglass probe: '${withoutPassword(text)}' is not a URL (try http://host:port/path)`,
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    // `localhost:8080/items`: the host read as a scheme, a port after it;
    // `user:pw@host:8080`, `user:pw@host/items` or `user:pw@host`: the user
    // read as one. (`mailto:ops@example.test` is the scheme it says.)
    if (
      /^[a-z][a-z0-9+.-]*:\d/i.test(text) ||
      credentialsBeforeHost(text) ||
      (!USER_AT_HOST_SCHEMES.has(url.protocol) && credentialsBeforeBareHost(text))
    ) {
      refuseMissingScheme(text)
    }
    throw new UsageError(
      `hourglass probe: only http: and https: URLs can be probed, got '${url.protocol}'`,
    )
  }
  // The parser takes port 0, which no server listens on: the call failed
  // only at fetch time, as a connection refused, after the probe had begun.
  if (url.port === '0') throw badPort(text, '0')
  return url
}

/**
 * `text` quoted on one line, without what could be a password: everything up
 * to the last `@` (a password may hold `/`, `?`, `#` or `@`), the scheme
 * kept. No regex across the whole text: linear on any argument.
 */
function withoutPassword(text: string): string {
  const at = text.lastIndexOf('@')
  const scheme = at < 0 ? '' : (/^[a-z][a-z0-9+.-]*:[\\/]*/i.exec(text.slice(0, at))?.[0] ?? '')
  return printable(at < 0 ? text : `${scheme}…${text.slice(at)}`, 80)
}

function badPort(text: string, port: string): UsageError {
  return new UsageError(
    `hourglass probe: '${withoutPassword(text)}' has port ${printable(port, 20)}, out of range (a port is 1 to 65535)`,
  )
}

/**
 * Schemes whose URLs are written `scheme:user@host`, with no `//` (IANA's
 * register): `mailto:ops@example.test` is one, where `user:pw@host` is a
 * user and password with the scheme left out.
 */
const USER_AT_HOST_SCHEMES = new Set([
  'mailto:',
  'acct:',
  'xmpp:',
  'sip:',
  'sips:',
  'im:',
  'pres:',
  'mid:',
  'cid:',
  'news:',
])

/** `user:pw@host`, `user@api.internal`: credentials before a host, and nothing after it. */
function credentialsBeforeBareHost(text: string): boolean {
  const at = text.lastIndexOf('@')
  // The host alone after the last `@` (no `/`, `?` or `#` there: a URL's
  // path); a host name with `_` (not a DNS name, but one people type) is
  // one too. (A password holding `/` or `#` makes the text ambiguous:
  // refuseMissingScheme offers no URL for it.)
  return at > 0 && /^(?:[a-z0-9._-]+|\[[0-9a-f:.]+\])$/i.test(text.slice(at + 1))
}

/**
 * A URL typed without its scheme, as curl takes it (`localhost:8080/items`,
 * `127.0.0.1:8080/items`, `user:pw@host:8080`), or with the colon after it
 * left out (`http//host/`): refused naming what is missing, with the URL to
 * try — not as a scheme `localhost:` never written, nor as no URL at all,
 * nor as `http://http//host/`. Credentials are shown as `…`, in the text
 * quoted and in the URL offered: a password is never echoed.
 */
function refuseMissingScheme(text: string): void {
  if (text.startsWith('/')) return
  const typo = /^(https?)\/\//i.exec(text)
  if (typo === null && text.includes('://')) return
  const written = typo?.[0] ?? ''
  const scheme = `${typo?.[1]?.toLowerCase() ?? 'http'}://`
  const rest = text.slice(written.length)
  try {
    if (new URL(`${scheme}${rest}`).hostname === '') return
  } catch {
    return
  }
  // Credentials end at the last `@` of the authority (up to the first `/`,
  // `?`, `#` or `\`), as the parser cuts it. An `@` past it may be a
  // password holding a `/` (`http:/u:pw@host`): no offer, and
  // the text is quoted as any other that is not a URL, up to its last `@` hidden.
  const end = rest.search(/[/?#\\]/)
  const at = rest.lastIndexOf('@')
  if (end >= 0 && at > end) return
  const hidden = at < 0 ? rest : `…${rest.slice(at)}`
  const note = at < 0 ? '' : '; … stands for the credentials, never printed'
  const given = printable(`${written}${hidden}`, 80)
  const fixed = printable(`${scheme}${hidden}`, 87)
  throw new UsageError(
    typo === null
      ? `hourglass probe: '${given}' has no scheme: try ${fixed} (or https://${note})`
      : `hourglass probe: '${given}' lacks the ':' after ${typo[1]}: try ${fixed}${note ? ` (${note.slice(2)})` : ''}`,
  )
}

/** `user:pw@host:8080`, `user@host/items`: credentials, then a host with a port or a path. */
function credentialsBeforeHost(text: string): boolean {
  const end = text.search(/[/?#\\]/)
  const authority = end < 0 ? text : text.slice(0, end)
  const at = text.lastIndexOf('@')
  return (
    at >= 0 &&
    at < authority.length &&
    (end >= 0 || /^(?:\[[^\]]*\]|[^:]*):\d+$/.test(authority.slice(at + 1)))
  )
}

/** The port a `scheme://host:port` text gives, when it is over 65535. */
function outOfRangePort(text: string): string | undefined {
  const start = text.indexOf('://')
  const rest = start < 0 ? text : text.slice(start + 3)
  const end = rest.search(/[/?#\\]/)
  const authority = end < 0 ? rest : rest.slice(0, end)
  const port = /^(?:\[[^\]]*\]|[^:]*):(\d+)$/.exec(
    authority.slice(authority.lastIndexOf('@') + 1),
  )?.[1]
  return port !== undefined && Number(port) > 65_535 ? port : undefined
}

function basicAuth(url: URL): string | undefined {
  if (url.username === '' && url.password === '') return undefined
  const user = percentDecoded(url.username)
  const password = percentDecoded(url.password)
  if (user === undefined || password === undefined) {
    throw new UsageError(
      'hourglass probe: the user or password in the URL has a broken %-escape (write % as %25)',
    )
  }
  return `Basic ${Buffer.concat([user, Buffer.from(':'), password]).toString('base64')}`
}

/**
 * The bytes a URL's user or password stands for, as curl sends them: each
 * `%XX` the byte it names, the rest as UTF-8. Read as UTF-8
 * (`decodeURIComponent`), `%E9` — a Latin-1 é, no broken escape — was
 * refused as one, and the advice to write `%25E9` sent the text `%E9`.
 * A `%` without two hex digits after it is broken: undefined.
 */
function percentDecoded(text: string): Buffer | undefined {
  if (/%(?![0-9a-f]{2})/i.test(text)) return undefined
  const bytes: Buffer[] = []
  let last = 0
  for (const m of text.matchAll(/%([0-9a-f]{2})/gi)) {
    bytes.push(Buffer.from(text.slice(last, m.index), 'utf8'))
    bytes.push(Buffer.from([Number.parseInt(m[1] ?? '', 16)]))
    last = m.index + 3
  }
  bytes.push(Buffer.from(text.slice(last), 'utf8'))
  return Buffer.concat(bytes)
}

function withoutCredentials(url: URL): string {
  if (url.username === '' && url.password === '') return url.href
  const copy = new URL(url.href)
  copy.username = ''
  copy.password = ''
  return copy.href
}

/**
 * A redirect's target as the message shows it: whole, its query too (the
 * message says to probe it), but its credentials shown as `…`, as an
 * argument's are — the Location is the server's to fill, and a password in
 * it reached stderr (and CI logs) as sent. By text, as the URL parser reads
 * it (fetch's `withoutQuery` reads it so too): after the scheme and any
 * number of slashes — none (`https:u:pw@h`), or backslashes — or after `//`
 * with no scheme, up to the authority's last `@` before its end (`/`, `?`,
 * `#`, `\`); a Location that does not parse (`http://u:pw@[bad/`), which
 * fetch hands over as sent, is covered too.
 */
function locationShown(location: string): string {
  // Tabs and newlines out first, as the URL parser takes them out anywhere.
  return location
    .replace(/[\t\n\r]/g, '')
    .replace(/^([\s\p{Cc}]*(?:[A-Za-z][A-Za-z0-9+.-]*:[/\\]*|[/\\]{2,}))[^/?#\\]*@/u, '$1…@')
}
