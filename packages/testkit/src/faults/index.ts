// Fault-injecting upstreams land here (issue 4).
export {}
