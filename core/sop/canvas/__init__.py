"""An SOP as a canvas of steps and arrows, and canvas edits written back into the SOP's own source.

The canvas is read from the source (a text SOP or a JSON node file) through the same compiler the engine
uses, so a step looks on the canvas as the engine runs it. Every edit is a small change of the source
text itself (a line inserted, a value replaced, a member removed): a file opened and saved without an edit
is the same file byte for byte, and an edit keeps the author's comments, front matter, key order and
indentation everywhere else.

Text SOPs go from a step to the one written under it, so on their canvas an arrow can be led to an end
(a ``terminate the flow`` line is written) or back onto the step below when a ``terminate`` stood in
between; other arrows are a JSON SOP's freedom and are refused with a sentence saying so.

The modules of this package:

- :mod:`core.sop.canvas.model`: the canvas (steps, arrows), an edit's result, a condition's check
- :mod:`core.sop.canvas.drawing`: an SOP's source read into a canvas, each step labelled by what it does
- :mod:`core.sop.canvas.conditions`: the condition builder and its live check
- :mod:`core.sop.canvas.edits`: the edits the canvas offers (add, connect, update, delete, declare a slot)
- :mod:`core.sop.canvas.settings`: the procedure's own settings (id, title, description, agent, triggers)
- :mod:`core.sop.canvas.text_index`: the indented lines of a text SOP, by line number
- :mod:`core.sop.canvas.text_edits`: edits written into a text SOP's lines
- :mod:`core.sop.canvas.json_edits`: edits written into a JSON SOP's members
"""
