"""What every part uses: typed session state, errors, lint problems, secret redaction, threads and locks."""
