// The Express 4 copy is installed under an alias (npm:express@4) without its
// own types; its API is the subset these tests use, typed like Express 5's.
declare module 'express4' {
  import express from 'express'
  export default express
}
