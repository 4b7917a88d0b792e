/**
 * Runs before every test file of the `parallel` project, whose workers run
 * file after file in one process (`isolate: false`). Puts OpenTelemetry's globals
 * back as a new process has them: no context manager, propagator, tracer or
 * meter provider, no diag logger. What a file subscribes (an
 * instrumentation, `instrumentDeadlines()`) it stops itself, in its own
 * after hooks: nothing here could reach those.
 */
import { context, diag, metrics, propagation, trace } from '@opentelemetry/api'

context.disable()
propagation.disable()
trace.disable()
metrics.disable()
diag.disable()
