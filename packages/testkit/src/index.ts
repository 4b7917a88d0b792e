export * from './faults/index.js'
export * from './providers/index.js'
