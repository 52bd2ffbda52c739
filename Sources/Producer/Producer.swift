// Producer: filled in by its issue.
