export * from './faults/index.js'
export * from './providers/index.js'
export * from './redis/index.js'
