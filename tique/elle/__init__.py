"""Elle-style consistency checking: list-append workloads, histories, and a checker."""
