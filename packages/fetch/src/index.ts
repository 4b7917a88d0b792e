// Placeholder so the workspace builds; this package lands with its issue.
export {}
