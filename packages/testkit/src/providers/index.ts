// Fake LLM providers land here (issue 6/7).
export {}
