"""End-to-end tests with real coding-agent clients against local API stubs."""
