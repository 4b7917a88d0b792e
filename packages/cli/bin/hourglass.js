#!/usr/bin/env node
// The `hourglass` command, as npm links it. A committed, executable file
// rather than dist/bin.js itself: npm links bins at install time, before a
// fresh clone has built anything, and every rebuild rewrites dist/bin.js
// without its execute bit. This file never changes, so the link always
// works and says what to do when the build is missing.
import { existsSync } from 'node:fs'

const entry = new URL('../dist/bin.js', import.meta.url)

if (!existsSync(entry)) {
  process.stderr.write('hourglass: not built yet — run `npm run build` first\n')
  process.exit(1)
}

try {
  await import(entry.href)
} catch (error) {
  // A partial build (the CLI built, a package it imports not): one line, not a stack.
  if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error
  const missing = /Cannot find (?:module|package) '([^']+)'/.exec(error.message)?.[1]
  process.stderr.write(
    `hourglass: cannot load ${missing ?? 'a module it needs'} — run \`npm run build\` first\n`,
  )
  process.exit(1)
}
