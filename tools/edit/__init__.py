"""The ``edit`` tool: exact-string replace or create of a file in the workspace. The tool
(:mod:`tools.edit.tool`), what the model sends (:mod:`tools.edit.call`), the text work
(:mod:`tools.edit.text`), the file work through :mod:`tools.beneath` (:mod:`tools.edit.files`)
and what an approver is shown (:class:`tools.question.ProposedEdit`)."""
