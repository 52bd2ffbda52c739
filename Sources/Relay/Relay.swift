// Relay: filled in by its issue.
