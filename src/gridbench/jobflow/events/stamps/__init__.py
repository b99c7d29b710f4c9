"""Server-side stamp sources as data: where each tier of a chain records its per-job
times (an SQLite query, log lines, one file per job), read incrementally during a run and
joined across tiers by the ids each tier uses (docs/backends.md, "Server stamps")."""
