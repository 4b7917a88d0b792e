// The CLI's programmatic surface lands with the `hourglass` command issue.
export {}
