import type { DemoFigures } from './DemoFigures.js'
import { NAIVE_ATTEMPTS } from './naiveChain.js'
import type { ChainFigures, WaterfallFigures } from './summarize.js'

const LABEL = 44
const COLUMN = 14

/** The demo's report, at most 80 columns wide. */
export function renderDemo(f: DemoFigures): string {
  const { toolkit: t, naive: n } = f
  const row = (label: string, a: string | number, b: string | number) =>
    `${label.padEnd(LABEL)}${String(a).padStart(COLUMN)}${String(b).padStart(COLUMN)}`
  const frac = (c: ChainFigures, k: keyof ChainFigures['onTimeByBudget']) => {
    const r = c.onTimeByBudget[k]
    return r ? `${r.onTime}/${r.requests}` : '—'
  }
  const vs = (c: ChainFigures) =>
    c.timeout504VsDeadlineMs
      ? `${signed(c.timeout504VsDeadlineMs.median)} / ${signed(c.timeout504VsDeadlineMs.max)}`
      : '—'
  const late = (c: ChainFigures) =>
    c.latestAnswerVsDeadlineMs === null ? '—' : signed(c.latestAnswerVsDeadlineMs)
  const zombieTotal = (c: ChainFigures) =>
    `${c.zombie.stillRunningAtEnd > 0 ? '≥' : ''}${c.zombie.totalMs} / ${c.zombie.maxMs}`
  const lines = [
    `${t.requests} requests, sent to two copies of the same chain:`,
    '  client → edge → api → model service → fake LLM provider, all on loopback',
    '  toolkit: one deadline, propagated, sliced and enforced (@hourglass/*)',
    `  naive:   30 s timeout per hop, up to ${NAIVE_ATTEMPTS} attempts per call, nothing propagated`,
    `  budgets ${f.budgetsMs.map(ms).join(', ')}; the client waits ${f.graceMs} ms past its deadline`,
    '',
    row('', 'toolkit', 'naive'),
    row(
      'answered on time (200 by the deadline)',
      `${t.onTime}/${t.requests}`,
      `${n.onTime}/${n.requests}`,
    ),
    ...Object.keys(t.onTimeByBudget).map((k) =>
      row(`  with a ${ms(Number(k))} budget`, frac(t, k), frac(n, k)),
    ),
    row('answered late (200 after the deadline)', t.late, n.late),
    row('504: deadline exceeded, slice named', t.timeouts504, n.timeouts504),
    row('  arrived vs deadline, median / max (ms)', vs(t), vs(n)),
    row('latest answer vs its deadline (ms)', late(t), late(n)),
    row('other errors (502, 503, …)', t.otherErrors, n.otherErrors),
    row('no answer: the client gave up', t.gaveUp, n.gaveUp),
    'work still running upstream after the client',
    row('had its answer or gave up: requests', t.zombie.requests, n.zombie.requests),
    row('  total / longest (ms)', zombieTotal(t), zombieTotal(n)),
    row('provider calls', t.providerCalls, n.providerCalls),
    row('paid generations', t.paidGenerations, n.paidGenerations),
    row(
      'paid generations per delivered answer',
      ratio(t.paidPerDelivered),
      ratio(n.paidPerDelivered),
    ),
  ]
  if (n.zombie.stillRunningAtEnd > 0 || t.zombie.stillRunningAtEnd > 0) {
    // One request is the likeliest count of all (the naive chain's slowest, at the drain's end).
    const still = n.zombie.stillRunningAtEnd + t.zombie.stillRunningAtEnd
    lines.push(
      still === 1
        ? '(≥: 1 request was still being worked on when the demo stopped)'
        : `(≥: ${still} requests were still being worked on when the demo stopped)`,
    )
  }
  lines.push('', ...legend(f.graceMs))
  if (f.waterfall) lines.push('', ...renderWaterfall(f.waterfall))
  lines.push('', ...closing(t))
  return `${lines.join('\n')}\n`
}

/**
 * The report's last words, from the figures above them: printed as a result
 * whatever the run showed, "answers every request by its deadline" stood
 * under a table whose toolkit column had answers after it (a loaded
 * machine's timers running late).
 */
function closing(t: ChainFigures): string[] {
  const latest = t.latestAnswerVsDeadlineMs ?? 0
  const late504 = t.timeout504VsDeadlineMs?.max ?? 0
  // "…and stopped working for it then" also needs the upstream to have
  // stopped: work on past an answer is what the table's zombie rows count.
  const byDeadline =
    t.late === 0 &&
    t.gaveUp === 0 &&
    Math.max(latest, late504) <= 0 &&
    t.zombie.requests === 0 &&
    t.zombie.stillRunningAtEnd === 0
  const naive = [
    'the naive chain keeps every hop busy — and the provider generating,',
    'billed — for clients that are already gone.',
  ]
  if (byDeadline) {
    return [
      'The toolkit chain answered every request by its deadline and stopped',
      'working for it then;',
      ...naive,
    ]
  }
  return [
    ...wrap(
      `In this run the toolkit chain missed deadlines (${misses(t).join(', ')}): this machine's timers ran late; is it busy?`,
    ),
    'By design it answers by the deadline and stops working for it then;',
    ...naive,
  ]
}

/**
 * Each kind of miss the closing judged by, named: a count of late 200s and
 * unanswered requests alone read "0 late or unanswered" when the miss was a
 * 504 that arrived after the deadline (the figures hold how late the latest
 * 504 was, not how many were late).
 */
function misses(t: ChainFigures): string[] {
  const latest = t.latestAnswerVsDeadlineMs ?? 0
  const late504 = t.timeout504VsDeadlineMs?.max ?? 0
  const found: string[] = []
  if (t.late > 0) found.push(`${t.late} answered late`)
  if (late504 > 0) {
    found.push(
      t.timeouts504 === 1
        ? `a 504 ${signed(late504)} ms past its deadline`
        : `504s up to ${signed(late504)} ms past their deadlines`,
    )
  }
  if (t.gaveUp > 0) found.push(`${t.gaveUp} unanswered`)
  // A later answer than the latest 504 is a late 200 or another status.
  if (latest > 0 && latest > late504) found.push(`latest answer ${signed(latest)} ms`)
  const workedOn = t.zombie.requests + t.zombie.stillRunningAtEnd
  if (workedOn > 0) {
    found.push(
      workedOn === 1
        ? 'work for 1 request went on after its answer'
        : `work for ${workedOn} requests went on after their answers`,
    )
  }
  return found
}

/** `text` in lines of at most 80 columns, broken between words. */
function wrap(text: string): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > 80) {
      lines.push(line)
      line = word
    } else line = line === '' ? word : `${line} ${word}`
  }
  return [...lines, line]
}

/** What each row of the table means, printed under it (at most 80 columns). */
export function legend(graceMs: number): string[] {
  return [
    'How to read it (ms; negative = before the deadline, + = after it):',
    '  on time / late: a 200 that arrived by / after the client’s deadline',
    '  504: the edge gave up by the deadline; its JSON body names the budget the',
    '    client sent and the slice that ran out (the api service’s, below, or',
    '    the edge’s own slice for calling it, api)',
    '  arrived vs deadline: when the 504s reached the client',
    '  latest answer: the last answer of any status, against its deadline',
    `  gave up: the client had no answer ${graceMs} ms past its deadline and hung up`,
    '  work still running: a hop (edge, api, model service) still busy for a',
    '    request after its client had an answer or gave up; total / longest:',
    '    that work summed over the requests / for the worst one',
    '  provider calls: requests the provider got; paid generations: those it',
    '    generated (billed) whether or not anyone read the answer',
    '  per delivered answer: paid generations / answers on time',
  ]
}

const BAR = 30

/** One request's slices: allotted (`.`) and used (`#`) on the request's budget. */
export function renderWaterfall(w: WaterfallFigures): string[] {
  const scale = BAR / w.budgetMs
  let offset = 0
  const lines = [
    `One ${ms(w.budgetMs)} request (${w.caseId}, answered ${w.status ?? 'nothing'}), the api service's slices:`,
    `  ${'slice'.padEnd(11)}${'allotted'.padStart(9)}${'used'.padStart(7)}  ${'outcome'.padEnd(12)}0${' '.repeat(BAR - 6)}${ms(w.budgetMs).padStart(6)}`,
  ]
  for (const s of w.slices) {
    const start = Math.min(BAR, Math.round(offset * scale))
    const used = Math.min(BAR - start, Math.round(s.usedMs * scale))
    const spare = Math.min(
      BAR - start - used,
      Math.round(Math.max(0, s.allottedMs - s.usedMs) * scale),
    )
    const bar = `${' '.repeat(start)}${'#'.repeat(used)}${'.'.repeat(spare)}`.padEnd(BAR)
    lines.push(
      `  ${s.name.padEnd(11)}${String(s.allottedMs).padStart(6)} ms${String(s.usedMs).padStart(4)} ms  ${s.outcome.padEnd(12)}|${bar}|`,
    )
    offset += s.usedMs
  }
  lines.push(
    '  dns, preprocess, model, write: look up the model service; parse, look up',
    '  the user and build the prompt; call the model service; write the response',
    '  allotted: its share of what was left when it started (what earlier slices',
    '  leave over flows to later ones); used: its time (# used, . not used)',
    '  outcome: ok; exceeded (its time ran out: the 504 names it); cancelled',
    '  (the request ended first); failed (an error); not-started',
  )
  return lines
}

function ms(value: number): string {
  return value >= 1000 && value % 1000 === 0 ? `${value / 1000} s` : `${value} ms`
}

function signed(value: number): string {
  return value > 0 ? `+${value}` : String(value)
}

function ratio(value: number | null): string {
  return value === null ? '—' : value.toFixed(2)
}
