"""The engine: the turn runner, the command processor, the goal stack, the SOP flow executor, reply
rendering, the grounding check and explanations of a turn."""
