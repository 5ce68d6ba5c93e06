"""The rule reader (:mod:`core.understanding.reading.reader`): a customer message read by rules into typed
commands, one module per judgement (the lead command, the SOP asked for, the pending question, a reply to the
running goal, side questions, follow-ups while no goal runs, a model's commands made whole)."""
