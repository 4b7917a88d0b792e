import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'

/**
 * True when `binary` (default `redis-server`) is an executable on PATH. Tests
 * that need a real Redis check this and, when it is missing, skip with a loud
 * warning naming the binary. Under CI (`CI` set) a missing binary throws
 * instead: CI installs it, and a suite that skipped there would pass without
 * testing anything.
 */
export function redisAvailable(binary = 'redis-server'): boolean {
  if (found(binary)) return true
  if (process.env.CI) {
    throw new Error(
      `${binary} is not on PATH, and CI must run the Redis tests: install it (see .ci/run)`,
    )
  }
  return false
}

function found(binary: string): boolean {
  if (binary.includes('/')) return isExecutable(binary)
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && isExecutable(join(dir, binary))) return true
  }
  return false
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}
