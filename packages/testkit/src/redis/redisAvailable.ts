import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'

/**
 * True when `binary` (default `redis-server`) is an executable on PATH. Tests
 * that need a real Redis check this and, when it is missing, skip with a loud
 * warning naming the binary (CI installs it).
 */
export function redisAvailable(binary = 'redis-server'): boolean {
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
