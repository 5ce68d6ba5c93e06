"""The HTTP API: sessions and turns over JSON, served by worker processes."""
