import {
  cutText,
  describeValue,
  escapeUnprintable,
  FLAG_TAGS,
  optionError,
  refuseUnknownOptions,
} from '@hourglass/core'
import { type Attributes, type HrTime, type SpanContext, SpanStatusCode } from '@opentelemetry/api'
import {
  ATTR_DEADLINE_ACTION,
  ATTR_DEADLINE_ATTEMPT,
  ATTR_DEADLINE_REMAINING_MS,
  ATTR_DEADLINE_RETRY_REASON,
  ATTR_DEADLINE_RETRY_WHY,
  ATTR_DEADLINE_SLICE,
  ATTR_DEADLINE_SLICE_ALLOTTED_MS,
  ATTR_DEADLINE_SLICE_USED_MS,
  ATTR_DEADLINE_STAGE,
} from './attributes.js'
import { columnsOf } from './columnsOf.js'

/**
 * The parts of a finished span the waterfall reads: the SDK's `ReadableSpan`
 * fits, without this package depending on the SDK.
 */
export interface WaterfallSpan {
  readonly name: string
  spanContext(): SpanContext
  readonly parentSpanContext?: SpanContext | undefined
  /**
   * The parent's id as OpenTelemetry SDK 1.x spans carry it (2.x has
   * `parentSpanContext`): read when `parentSpanContext` is absent, or a 1.x
   * exporter's spans were drawn flat, every one a root.
   */
  readonly parentSpanId?: string | undefined
  readonly startTime: HrTime
  /** `[0, 0]` on an SDK span not ended yet. */
  readonly endTime: HrTime
  /**
   * False for a span not ended yet (the SDK's `ReadableSpan` says so): one
   * a span processor's `onStart` collected, say. Drawn as still open.
   */
  readonly ended?: boolean | undefined
  readonly attributes: Attributes
  readonly status: { code: SpanStatusCode }
  readonly events: ReadonlyArray<{ name: string; time: HrTime; attributes?: Attributes }>
}

export interface WaterfallOptions {
  /**
   * Line width in characters. Default 80; below 60 is raised to 60, above
   * 1000 cut to 1000; not a finite number: refused.
   */
  columns?: number | undefined
  /**
   * End with a key to the labels the waterfall uses (only those it uses),
   * wrapped to `columns`. Default true.
   */
  legend?: boolean | undefined
}

const OPTION_NAMES = Object.keys({
  columns: true,
  legend: true,
} satisfies Record<keyof WaterfallOptions, true>)

const LABEL_WIDTH = 30
/**
 * How far the bar, then the label column, give way to figures wider than
 * the room kept for them (`left 29990`, `12345/29000`): cut at the line's
 * end instead, `left 29990` read `left 299~`, another number.
 */
const MIN_BAR_WIDTH = 7
const MIN_LABEL_WIDTH = 16
/**
 * The widest waterfall drawn, in characters. Every line's bar is as wide as
 * `columns` asks: a value in bytes or ms where columns belong (1e8) built a
 * 100 MB string per span, and 1e9 threw "Invalid string length" from deep
 * inside. No terminal is wider; a file read in an editor needs no more.
 */
const MAX_COLUMNS = 1000
const DURATION_WIDTH = 9

/**
 * An ASCII waterfall of the spans of one request, for a terminal: one line
 * per span in tree order (children indented under their parent, by start
 * time), a bar on a shared time axis, the duration, and the deadline numbers
 * (`left` = `hourglass.deadline.remaining_ms`, `used/allotted` for slices). Failed spans
 * are marked `!`; `hourglass.deadline.*` events get a line of their own under their span
 * (named without `hourglass.`).
 *
 *   GET /quote                 |##############################|  812.3ms left 1000
 *     deadline.slice model     |  ######################      |  600.1ms 600/640
 *     ! deadline.exceeded  +801.0ms  stage=slice slice=model
 *
 * A key follows (`legend: false` leaves it out), naming only what was drawn.
 */
export function formatWaterfall(
  spans: readonly WaterfallSpan[],
  options: WaterfallOptions = {},
): string {
  // A typo is refused as every options object of the packages refuses one:
  // ignored, `{ colums: 60 }` drew 80 columns without a word.
  refuseUnknownOptions(options, OPTION_NAMES, 'formatWaterfall()')
  const given = options.columns
  // Checked before anything is drawn: Infinity or NaN drew empty bars, or
  // threw "Invalid count value" from deep inside.
  if (given !== undefined && (typeof given !== 'number' || !Number.isFinite(given))) {
    throw optionError('formatWaterfall: columns', 'a finite number of characters', given)
  }
  // Only `false` leaves the key out: `'false'` or `0` drew it without a word.
  const { legend: drawKey } = options
  if (drawKey !== undefined && typeof drawKey !== 'boolean') {
    throw new TypeError(
      `formatWaterfall: legend must be true or false, got ${describeValue(drawKey)}`,
    )
  }
  // Checked as the options are: the exporter's method passed uncalled
  // (`exporter.getFinishedSpans`, a function of length 0) drew "(no spans)"
  // over a trace that had spans; undefined, a Set or an object failed deep
  // inside ("Cannot read properties of undefined (reading 'length')").
  if (!Array.isArray(spans)) {
    const hint = typeof spans === 'function' ? ': call it for its spans' : ''
    throw new TypeError(
      `formatWaterfall: spans must be an array of spans (exporter.getFinishedSpans()), got ${describeValue(spans)}${hint}`,
    )
  }
  for (const [index, s] of spans.entries()) {
    if (typeof s !== 'object' || s === null || typeof s.spanContext !== 'function') {
      throw new TypeError(
        `formatWaterfall: spans[${index}] must be a span (a ReadableSpan), got ${describeValue(s)}`,
      )
    }
  }
  if (spans.length === 0) return '(no spans)\n'
  const columns = Math.min(MAX_COLUMNS, Math.max(60, Math.floor(given ?? 80)))
  // A loop, not Math.min(...spans): spreading an exporter's 150 000 spans
  // into arguments overflowed the stack.
  let t0 = Number.POSITIVE_INFINITY
  let t1 = Number.NEGATIVE_INFINITY
  for (const s of spans) {
    const start = toMs(s.startTime)
    t0 = Math.min(t0, start)
    // An open span has no end to count (the SDK's is [0, 0], the epoch): it
    // ran at least until its start and its last event.
    t1 = Math.max(t1, start)
    if (!isOpen(s)) t1 = Math.max(t1, toMs(s.endTime))
    else for (const event of s.events) t1 = Math.max(t1, toMs(event.time))
  }
  const total = Math.max(t1 - t0, 1e-3)

  const ids = new Set(spans.map((s) => s.spanContext().spanId))
  const children = new Map<string | undefined, WaterfallSpan[]>()
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId ?? span.parentSpanId
    const key = parent !== undefined && ids.has(parent) ? parent : undefined
    const list = children.get(key) ?? []
    list.push(span)
    children.set(key, list)
  }
  for (const list of children.values()) list.sort((a, b) => toMs(a.startTime) - toMs(b.startTime))

  const traceIds = new Set(spans.map((s) => s.spanContext().traceId))
  const used = new Set<LegendItem>(['trace'])
  // Lines are built from the text as given and escaped here, when drawn
  // (`cut`): measured by what is drawn, an escape six columns wide.
  const fit = (line: string) => {
    if (escapedFits(line, columns)) return escapeUnprintable(line)
    used.add('~')
    return cut(line, columns)
  }
  // The widest figures are given room before any line is drawn: the bar
  // and the label column shrink for them, on every line alike, so the time
  // axis stays shared.
  // A figure too wide for the narrowest layout is left out of its line
  // anyway (drawRow): it narrows no other.
  const fits = columns - 4 - MIN_BAR_WIDTH - MIN_LABEL_WIDTH
  let widestTail = 0
  // Each span's figures, worked out once for this pass and the drawing.
  const rows = new Map<WaterfallSpan, Row>()
  for (const span of spans) {
    const figures = row(span, t0, t1)
    rows.set(span, figures)
    const width = figures.tail.length
    if (width <= fits) widestTail = Math.max(widestTail, width)
  }
  const layout = fitColumns(widestTail, columns)
  const lines = [header([...traceIds], `  ${spans.length} spans  ${fmtMs(total)}`, columns, used)]
  // No span drawn inside itself: one listed as its own parent (ids repeated
  // across the spans given) recursed until the stack overflowed.
  const path = new Set<WaterfallSpan>()
  const drawn = new Set<WaterfallSpan>()
  const draw = (span: WaterfallSpan, depth: number) => {
    drawn.add(span)
    const figures = rows.get(span) ?? row(span, t0, t1)
    if (figures.open) used.add('>')
    const failed = span.status.code === SpanStatusCode.ERROR ? '!' : ' '
    if (failed === '!') used.add('!')
    // Indented no deeper than just past the label column, all that is drawn
    // of it: a chain 12 000 levels deep built 24 000 spaces for its last line.
    const label = `${'  '.repeat(Math.min(depth, LABEL_WIDTH / 2 + 1))}${failed}${title(span)}`
    if (figures.item) used.add(figures.item)
    lines.push(drawRow(label, figures, layout, total, used))
    for (const event of span.events) {
      if (!event.name.startsWith(EVENT_PREFIX)) continue
      // Shortened as the keys are (`why=`): an 80-column line has no room for the vendor prefix.
      const name = event.name.slice(VENDOR_PREFIX.length)
      used.add('!').add('+ms')
      const at = `+${fmtMs(toMs(event.time) - t0)}`
      const attributes = event.attributes ?? {}
      for (const key of EVENT_KEYS) if (attributes[key] !== undefined) used.add(shortKey(key))
      // Details that do not fit go on lines of their own under the event,
      // never cut: a retry_skipped line is 85 characters or more, and cut at
      // 80 it lost its last detail, the reason (`reason=~`).
      // A name too long for the line with its time gives way, cut (`~`):
      // the time is a figure, and cut at the line's end it read as another
      // (`+250.~`). The package's own names are short; a user's own event
      // under `hourglass.deadline.` need not be.
      const room = columns - 4 - at.length
      const whole = escapedFits(name, room)
      const shown = whole ? escapeUnprintable(name) : cut(name, room)
      if (!whole) used.add('~')
      // Indented no further than the label column, nor than leaves the
      // event's name and time whole: thirty levels down, the indent alone
      // filled the line and `+250.0ms` was cut to `+2~`.
      const indent = Math.max(0, Math.min(2 * (depth + 1), LABEL_WIDTH, room - columnsOf(shown)))
      const head = `${' '.repeat(indent)}! ${shown}  ${at}`
      // Continuation lines start under the event's name, past its `! `; a
      // detail longer than a whole line is still cut (`~`). The details are
      // escaped by `fit`; `shown`, escaped already, is left as it is (an
      // escape is printable text).
      const more = ' '.repeat(indent + 4)
      let line = head
      for (const detail of eventDetails(attributes)) {
        const next = `${line}${line === head ? '  ' : ' '}${detail}`
        if (!escapedFits(next, columns)) {
          lines.push(fit(line))
          line = `${more}${detail}`
        } else line = next
      }
      lines.push(fit(line))
    }
  }
  // Depth first with a stack of our own, not by recursion: a trace whose
  // spans each parent the next (a poll loop that starts its next round in
  // the current round's active span) is as deep as it is long, and one
  // stack frame per level overflowed past a few thousand.
  const visit = (root: WaterfallSpan) => {
    const stack: Array<{ span: WaterfallSpan; depth: number } | { leave: WaterfallSpan }> = [
      { span: root, depth: 0 },
    ]
    for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
      if ('leave' in frame) {
        path.delete(frame.leave)
        continue
      }
      const { span, depth } = frame
      if (path.has(span)) continue
      draw(span, depth)
      path.add(span)
      stack.push({ leave: span })
      const below = children.get(span.spanContext().spanId) ?? []
      // Pushed last first, so the earliest child is drawn first.
      for (let i = below.length - 1; i >= 0; i--) {
        stack.push({ span: below[i] as WaterfallSpan, depth: depth + 1 })
      }
    }
  }
  for (const root of children.get(undefined) ?? []) visit(root)
  // Spans whose parents form a loop (one its own parent, or two each the
  // other's: ids reused across exports) have no root to be reached from: they
  // were left out, under a header that counted them. Each such loop is drawn
  // from its earliest span; what hangs under a loop is drawn under it (a
  // span reached from the loop, never drawn as a root of its own first).
  const firstId = new Map<string, WaterfallSpan>()
  for (const span of spans) {
    const id = span.spanContext().spanId
    if (!firstId.has(id)) firstId.set(id, span)
  }
  const parentOf = (span: WaterfallSpan) => {
    const id = span.parentSpanContext?.spanId ?? span.parentSpanId
    return id === undefined ? undefined : firstId.get(id)
  }
  const byStart = (a: WaterfallSpan, b: WaterfallSpan) => toMs(a.startTime) - toMs(b.startTime)
  for (const span of [...spans].sort(byStart)) {
    if (drawn.has(span)) continue
    // Up its parents until one repeats: that one is in the loop above it.
    const seen = new Set<WaterfallSpan>()
    let at: WaterfallSpan | undefined = span
    while (at !== undefined && !seen.has(at)) {
      seen.add(at)
      at = parentOf(at)
    }
    const loop: WaterfallSpan[] = []
    for (
      let member = at;
      member !== undefined && !loop.includes(member);
      member = parentOf(member)
    ) {
      loop.push(member)
    }
    visit(loop.length > 0 ? (loop.sort(byStart)[0] as WaterfallSpan) : span)
    if (!drawn.has(span)) visit(span)
  }
  if (options.legend !== false) lines.push('', ...legend(used, columns))
  return `${lines.join('\n')}\n`
}

/** A span's figures: times in ms from the first start (`t0`). */
interface Row {
  start: number
  end: number
  open: boolean
  /** Padded to DURATION_WIDTH. */
  duration: string
  /** The duration, then the deadline numbers (`left 971`, `176/175`) if any. */
  tail: string
  item?: LegendItem | undefined
}

function row(span: WaterfallSpan, t0: number, t1: number): Row {
  const start = toMs(span.startTime) - t0
  // A span not ended yet runs on to the last time the waterfall knows of,
  // and says so (`>`, its duration at least that): its end of [0, 0] drew
  // a duration of -1700000000000.0ms, and a bar of one character.
  const open = isOpen(span)
  const end = open ? t1 - t0 : toMs(span.endTime) - t0
  const duration = `${open ? '>=' : ''}${fmtMs(end - start)}`.padStart(DURATION_WIDTH)
  const numbers = note(span.attributes)
  const tail = `${duration} ${numbers.text}`.trimEnd()
  return { start, end, open, duration, tail, item: numbers.item }
}

interface Layout {
  columns: number
  labelWidth: number
  barWidth: number
}

/**
 * Widths for the label column and the bar such that the widest figures
 * fit: the bar gives way first (down to MIN_BAR_WIDTH), then the label
 * column (down to MIN_LABEL_WIDTH). The usual figures (`left 1490`) fit the
 * room kept for them, and the layout is the one it always was.
 */
function fitColumns(widestTail: number, columns: number): Layout {
  // A figure too wide for the narrowest layout is left out of its line
  // (drawRow), and makes no other line narrower.
  const widest = columns - 4 - MIN_BAR_WIDTH - MIN_LABEL_WIDTH
  const tail = Math.max(DURATION_WIDTH + 10, Math.min(widest, widestTail))
  const room = columns - 4 - tail
  const barWidth = Math.max(MIN_BAR_WIDTH, room - LABEL_WIDTH)
  const labelWidth = Math.max(MIN_LABEL_WIDTH, Math.min(LABEL_WIDTH, room - barWidth))
  return { columns, labelWidth, barWidth }
}

function drawRow(
  label: string,
  line: Row,
  layout: Layout,
  total: number,
  used: Set<LegendItem>,
): string {
  const { columns, labelWidth, barWidth } = layout
  const from = Math.min(barWidth - 1, Math.floor((line.start / total) * barWidth))
  const to = Math.max(from + 1, Math.ceil((line.end / total) * barWidth))
  const bar =
    ' '.repeat(from) +
    (line.open ? `${'#'.repeat(to - from - 1)}>` : '#'.repeat(to - from)) +
    ' '.repeat(barWidth - to)
  if (!escapedFits(label, labelWidth)) used.add('~')
  const start = `${pad(label, labelWidth)} |${bar}| `
  const whole = `${start}${line.tail}`
  if (columnsOf(whole) <= columns) return whole
  // Figures too wide even for the narrowest columns: the deadline numbers
  // are left out whole, never cut to read as another value.
  used.add('~')
  const shorter = `${start}${line.duration} ~`
  // `start` is escaped already: `cut` escapes it again to the same text.
  return columnsOf(shorter) <= columns ? shorter : cut(start, columns)
}

/**
 * `trace 5c55ade4  9 spans  87.4ms`: trace ids that do not fit are left out
 * whole (`…,~`), never the span count or the time, nor an id cut short.
 */
function header(
  traceIds: readonly string[],
  counts: string,
  columns: number,
  used: Set<LegendItem>,
): string {
  const ids = traceIds.map((id) => id.slice(0, 8))
  const whole = `trace ${ids.join(',')}${counts}`
  if (whole.length <= columns) return whole
  used.add('~')
  let shown = ids.length - 1
  while (shown > 1 && `trace ${ids.slice(0, shown).join(',')},~${counts}`.length > columns) shown--
  return `trace ${ids.slice(0, shown).join(',')},~${counts}`
}

/** Write `formatWaterfall(spans)` to a stream (default: stdout). */
export function printWaterfall(
  spans: readonly WaterfallSpan[],
  write: (text: string) => unknown = (text) => process.stdout.write(text),
  options?: WaterfallOptions,
): void {
  // formatWaterfall takes its options second, this third: given second (or a
  // stream for its write method), they failed as "write is not a function".
  if (typeof write !== 'function') {
    const hint =
      typeof write === 'object' && write !== null
        ? '; options go third: printWaterfall(spans, undefined, options)'
        : ''
    throw new TypeError(
      `printWaterfall: write must be a function (text) => unknown, got ${describeValue(write)}${hint}`,
    )
  }
  write(formatWaterfall(spans, options))
}

/**
 * HTTP spans named by method alone (no route known) read better with their path.
 * As given: escaped where drawn (`pad`), as every package shows text that is
 * not its own (core's `escapeUnprintable`): a line break in a name drew the
 * rest of its row on a line of its own, and a carriage return or an escape
 * sequence (ESC [31m) moved the cursor or coloured the terminal. Escaped
 * before the cut, an escape was cut in half (`cut`).
 */
function title(span: WaterfallSpan): string {
  const path = span.attributes['url.path']
  return typeof path === 'string' && !span.name.includes(' ') ? `${span.name} ${path}` : span.name
}

function note(attributes: Attributes): { text: string; item?: LegendItem } {
  const allotted = attributes[ATTR_DEADLINE_SLICE_ALLOTTED_MS]
  const used = attributes[ATTR_DEADLINE_SLICE_USED_MS]
  if (typeof allotted === 'number' && typeof used === 'number') {
    return { text: `${Math.round(used)}/${Math.round(allotted)}`, item: 'used/allotted' }
  }
  const left = attributes[ATTR_DEADLINE_REMAINING_MS]
  if (typeof left === 'number') return { text: `left ${Math.round(left)}`, item: 'left' }
  return { text: '' }
}

/** Events this package adds (`hourglass.deadline.exceeded`, …). */
const VENDOR_PREFIX = 'hourglass.'
const EVENT_PREFIX = `${VENDOR_PREFIX}deadline.`

const EVENT_KEYS = [
  ATTR_DEADLINE_STAGE,
  ATTR_DEADLINE_SLICE,
  ATTR_DEADLINE_ATTEMPT,
  ATTR_DEADLINE_RETRY_WHY,
  ATTR_DEADLINE_RETRY_REASON,
  ATTR_DEADLINE_ACTION,
]

/** As given, escaped where drawn (`fit`), as names are: a slice's name, a failure's code. */
function eventDetails(attributes: Attributes): string[] {
  return EVENT_KEYS.filter((k) => attributes[k] !== undefined).map(
    (k) => `${shortKey(k)}=${String(attributes[k])}`,
  )
}

/** `hourglass.deadline.retry.why` → `why`: the name an event key has on an event line. */
function shortKey(key: string): LegendItem {
  return key.slice(key.lastIndexOf('.') + 1) as LegendItem
}

/** What each label means, tersely (the README says it at length), in the order the key lists them. */
const LEGEND = {
  trace: 'trace = id prefix, spans, first start to last end',
  left: 'left = ms left at start',
  'used/allotted': 'used/allotted = slice ms',
  '!': '! = failed span or deadline event',
  '+ms': '+ms = since the first start',
  '>': '> = not ended: drawn to the last time known, lasted at least that',
  stage: 'stage = where time ran out',
  slice: 'slice = slice running',
  attempt: 'attempt = 1 for the first',
  why: 'why = why not retried',
  reason: 'reason = failure retried',
  action: 'action = what was done',
  '~': '~ = cut to fit',
} as const

type LegendItem = keyof typeof LEGEND

/** The meaning of each label drawn, as `key: …; …` wrapped to `columns`. */
function legend(used: ReadonlySet<LegendItem>, columns: number): string[] {
  const entries = (Object.keys(LEGEND) as LegendItem[]).filter((item) => used.has(item))
  const words = `key: ${entries.map((item) => LEGEND[item]).join('; ')}`.split(' ')
  const lines: string[] = []
  let line = ''
  for (const word of words) {
    if (line !== '' && line.length + 1 + word.length > columns) {
      lines.push(line)
      line = `  ${word}`
    } else {
      line = line === '' ? word : `${line} ${word}`
    }
  }
  lines.push(line)
  return lines
}

/**
 * Not ended yet: the SDK says so (`ended: false`), or, for spans that do not
 * say, an end before the start (an SDK span not ended has `[0, 0]`; one
 * ended before its start is given its start as its end).
 */
function isOpen(span: WaterfallSpan): boolean {
  return span.ended === false || toMs(span.endTime) < toMs(span.startTime)
}

function toMs(time: HrTime): number {
  return time[0] * 1000 + time[1] / 1e6
}

function fmtMs(ms: number): string {
  return `${ms.toFixed(1)}ms`
}

/** `text` escaped (`cut`), cut to `width` if longer, padded to it. */
function pad(text: string, width: number): string {
  // Padded after the cut too: one that kept an emoji or an escape whole is
  // short, and the bar after it must start in the same column on every line.
  // By the columns drawn (`columnsOf`), not its length: a wide character is two.
  const shown = escapedFits(text, width) ? escapeUnprintable(text) : cut(text, width)
  return shown + ' '.repeat(Math.max(0, width - columnsOf(shown)))
}

/**
 * Whether `text` escaped takes at most `width` columns. Text longer than
 * `maxUnits(width)` is not escaped to be measured, and goes to `cut` (which
 * keeps it whole, without `~`, if it fits after all): a name of a million
 * control characters, escaped whole (six times as long), took seconds per
 * line.
 */
function escapedFits(text: string, width: number): boolean {
  return text.length <= maxUnits(width) && columnsOf(escapeUnprintable(text)) <= width
}

/**
 * The most UTF-16 units a text of `width` columns is given, escaped or
 * measured: four a column hold an astral character's pair, or a letter with
 * its marks as a decomposed ệ writes them; only a pile of marks, or of
 * flags (up to 68 units for 2 columns), is cut sooner. One bound for
 * `escapedFits` and `cut`: at two a column there, a name of four flags that
 * fitted was drawn whole and still marked `~`, and an event's detail that
 * fitted was wrapped.
 */
function maxUnits(width: number): number {
  return 4 * width + 16
}

/**
 * The most zero-width pieces (combining marks, joiners) kept after a
 * character: Unicode's stream-safe limit. A name of a thousand marks on one
 * letter walked, escaped and measured ~120 of them a line, drawing nothing,
 * and 150,000 such spans took five times as long.
 */
const MAX_ZERO_WIDTH_RUN = 30

/**
 * `text` (as given, too long to measure whole) escaped and cut to at most
 * `width`, `~` last (none when all of it fits): after a whole escape, as core's `quoted` cuts.
 * Cut once escaped, a NUL at the line's end read `\u0~`, half an escape;
 * and the escaped text cannot tell where an escape ends, a backslash of the
 * text's own (`C:\`) being no escape's start. Never between the two
 * halves of a surrogate pair either, nor inside a subdivision's flag, as
 * core's `cutText` cuts: sliced by UTF-16 unit, a name with an emoji at the
 * cut kept half of it, a lone surrogate, which a terminal shows as `�` and a
 * log shipper may refuse to encode.
 */
function cut(text: string, width: number): string {
  // Printable ASCII where the cut lands, one column a unit and nothing to
  // escape: core's cut, one call, where the loop below costs one escape call
  // a character (drawing 150,000 spans took ~40 % longer with it alone).
  const head = text.slice(0, width + 16)
  if (PRINTABLE_ASCII.test(head)) return `${cutText(text, width).slice(0, -1)}~`
  // By columns (`columnsOf`): a wide character (`检`) is two, kept only whole.
  // And by length: a combining mark takes no column, and a name of a
  // million of them was walked and kept whole (a line of 1,000,070 UTF-16
  // units, ~2 s to draw). Four units a column hold an astral character's
  // pair, or a letter with its marks as a decomposed ệ writes them: only a
  // pile of marks, or of flags (up to 68 units for 2 columns), is cut
  // sooner (`maxUnits`), and a run of marks past the stream-safe 30.
  const most = maxUnits(width)
  let out = ''
  let used = 0
  let zeroWidthRun = 0
  for (const [piece] of text.matchAll(PIECES)) {
    const shown = escapeUnprintable(piece)
    const columns = columnsOf(shown)
    if (used + columns > width - 1 || out.length + shown.length > most) return `${out}~`
    zeroWidthRun = columns === 0 ? zeroWidthRun + 1 : 0
    if (zeroWidthRun > MAX_ZERO_WIDTH_RUN) return `${out}~`
    out += shown
    used += columns
  }
  // All of it, in fewer columns than the line has (its units, not its
  // columns, sent it here): nothing was cut, so no `~` says so.
  return out
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

/**
 * One character as `escapeUnprintable` reads it: a flag whole, else one code
 * point (a lone half of a surrogate pair too).
 */
const PIECES = new RegExp(`${FLAG_TAGS}|[^]`, 'gu')
