"""Where sessions and what is remembered about customers are kept: the session stores (SQLite,
PostgreSQL) and preference memory (local, PostgreSQL, Zep)."""
