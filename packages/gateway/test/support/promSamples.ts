/** `name{labels} value` lines of a Prometheus text page, as [name, labels, value]. */
export function samples(page: string): Array<[string, Record<string, string>, number]> {
  return page
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
      if (!match) throw new Error(`not a sample line: ${line}`)
      const labels = Object.fromEntries(
        [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
      )
      return [match[1]!, labels as Record<string, string>, Number(match[3])]
    })
}
