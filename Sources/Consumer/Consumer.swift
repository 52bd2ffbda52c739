// Consumer: filled in by its issue.
