import { readFileSync } from 'node:fs'

/**
 * The first port a process without privileges may listen on: Linux's
 * net.ipv4.ip_unprivileged_port_start where it can be read (a container's
 * runtime often lowers it: Docker sets 0), else the traditional 1024.
 * Read when a listen is refused, so that the reason given is this machine's.
 */
export function unprivilegedPortStart(): number {
  try {
    const value = readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8').trim()
    const start = /^\d+$/.test(value) ? Number(value) : Number.NaN
    if (Number.isSafeInteger(start)) return start
  } catch {
    // Not Linux, or no /proc: the traditional bound.
  }
  return 1024
}
