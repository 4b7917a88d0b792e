// Starts a throwaway redis-server on loopback for tests (issue 7/11).
export {}
