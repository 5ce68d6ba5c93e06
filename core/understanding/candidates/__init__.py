"""Candidate readings proposed from a message: the learned reader's slot spans and dialogue acts (:mod:`.learned`),
with the inputs and span decoding it shares with its training (:mod:`.encoding`) and its weights (``reader_model/``)."""
