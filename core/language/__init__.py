"""Language data and text helpers: numbers, money and dates in words, the per-language lexicons and the
reply catalogues. Knowledge of a language lives in data files here, never in the engine."""
