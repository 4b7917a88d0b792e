import { readFileSync } from 'node:fs'
import os from 'node:os'

/** Formats a number for a table: fixed digits, thousands separated, `—` for none. */
export function fmt(value, digits = 0) {
  if (value === undefined || value === null || Number.isNaN(value)) return '—'
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '−∞'
  return value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  })
}

/** ours ÷ peer, as `0.97×`; `—` when either is missing or ≤ 0 (a ratio of signed lateness means nothing). */
export function ratioText(ours, peer, digits = 2) {
  if (!Number.isFinite(ours) || !Number.isFinite(peer) || peer <= 0 || ours < 0) return '—'
  return `${fmt(ours / peer, digits)}×`
}

/**
 * One table row. `verdict` is `PASS`/`MISS` for rows with a target from
 * issue 9 (or 11), `info` for context rows that have none.
 */
export function row({
  measure,
  peerName,
  peer,
  ours,
  ratio,
  target = 'none set',
  verdict = 'info',
}) {
  return { measure, peerName, peer, ours, ratio, target, verdict }
}

export function verdict(ok) {
  return ok ? 'PASS' : 'MISS'
}

export function machine() {
  let cpu = os.cpus()[0]?.model ?? 'unknown'
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'))
    if (line) cpu = line.split(':').slice(1).join(':').trim()
  } catch {
    // not Linux: os.cpus() is as good as it gets
  }
  return {
    nproc: os.availableParallelism?.() ?? os.cpus().length,
    cpu,
    memGb: os.totalmem() / 2 ** 30,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
  }
}

function escapeCell(text) {
  return String(text).replaceAll('|', '\\|').replaceAll('\n', ' ')
}

function table(rows) {
  const head = ['measure', 'peer', "peer's figure", 'ours', 'ours ÷ peer', 'target', 'result']
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`]
  for (const r of rows) {
    const cells = [r.measure, r.peerName, r.peer, r.ours, r.ratio, r.target, r.verdict]
    lines.push(`| ${cells.map(escapeCell).join(' | ')} |`)
  }
  return lines.join('\n')
}

/** The whole markdown report. */
export function render({ sections, command, quick, startedAt, elapsedMs }) {
  const m = machine()
  const targeted = sections.flatMap((s) => s.rows.filter((r) => r.verdict !== 'info'))
  const passed = targeted.filter((r) => r.verdict === 'PASS').length
  const out = []
  out.push('# Benchmarks')
  out.push('')
  if (quick) {
    out.push(
      '> **Smoke run (`--quick`)**: tiny counts, one or two rounds. It checks that every benchmark completes; its numbers mean nothing.',
    )
    out.push('')
  }
  out.push(`Made by \`${command}\` on ${startedAt.toISOString()} in ${fmt(elapsedMs / 1000, 0)} s.`)
  out.push('')
  out.push(
    `Machine: ${m.nproc} CPUs (${m.cpu}), ${fmt(m.memGb, 1)} GiB, ${m.platform}; Node ${m.node}. ` +
      'Shared with other work while it ran: treat single figures as noisy and read the ratios.',
  )
  out.push('')
  out.push(
    'Method: every figure is a **ratio measured side by side in the same run**. ' +
      'Variants run interleaved for several rounds, each round in a new order (the rows of a Williams ' +
      'design, forwards then backwards, so no variant always follows the same one), and each figure is ' +
      'the median over rounds. Servers under load run in their own Node process, the load generator in ' +
      'another (the egress clients each in their own), on 127.0.0.1 only. `ours ÷ peer` is ours divided by the peer: above 1 is more ' +
      'throughput or more time, depending on the row. Rows marked `info` have no target in the issue ' +
      'and are there for context. Where we lose, the row says MISS and the notes say why.',
  )
  out.push('')
  out.push(`**${passed} of ${targeted.length} targets met.**`)
  out.push('')
  out.push('| # | benchmark | targets met |')
  out.push('| --- | --- | --- |')
  for (const s of sections) {
    const t = s.rows.filter((r) => r.verdict !== 'info')
    const p = t.filter((r) => r.verdict === 'PASS').length
    out.push(
      `| ${s.id} | [${s.title}](#${anchor(s)}) | ${t.length === 0 ? 'info only' : `${p} / ${t.length}`} |`,
    )
  }
  for (const s of sections) {
    out.push('')
    out.push(`## ${s.id}. ${s.title}`)
    out.push('')
    out.push(s.setup)
    out.push('')
    if (s.rows.length > 0) out.push(table(s.rows))
    for (const note of s.notes ?? []) {
      out.push('')
      out.push(note)
    }
  }
  out.push('')
  return out.join('\n')
}

function anchor(section) {
  return `${section.id}-${section.title}`
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .trim()
    .replace(/ /g, '-')
}
