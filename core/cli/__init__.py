"""The command line (``python -m core ...``): each command reads its arguments and calls the parts below."""
