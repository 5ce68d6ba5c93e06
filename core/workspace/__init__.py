"""A workspace on disk: store.yaml's declarations, gar.csv, slot kinds, and the files and paths that
belong to a workspace."""
