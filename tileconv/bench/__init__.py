"""tileconv's benchmark: suites of named problems, timing beside peers, reports."""
