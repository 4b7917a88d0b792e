/**
 * Runs before every test file of the `parallel` and `timing` projects, whose
 * workers run file after file in one process (`isolate: false`). Puts back what Hourglass
 * keeps per process, as a new process would have it, so no file inherits
 * another's: the timer lateness that sets the adaptive reserve (a fuzz file
 * that held the loop for seconds would give the next file's servers a 100 ms
 * reserve), and the default admission and retry budgets that every
 * `callModel` without its own shares (cooldowns, spent retry tokens).
 */
import { resetTimerLateness } from '@hourglass/core'
import { setDefaultAdmission, setDefaultRetryBudgets } from '@hourglass/llm'

resetTimerLateness()
setDefaultAdmission(undefined)
setDefaultRetryBudgets(undefined)
