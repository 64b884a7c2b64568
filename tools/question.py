"""An approval question about a tool call that is no shell command (an MCP tool's): still
the ``str`` every approver takes (the text to show: what will be done, with which
arguments), carrying the words a front end says around it instead of its bash wording."""

from __future__ import annotations


class ToolQuestion(str):
    """``asks``: the question (``Call this MCP tool?``); ``where``: how it runs (it is not
    inside the bash sandbox); ``always``: what "always" means for it."""

    asks: str
    where: str
    always: str

    def __new__(cls, text: str, *, asks: str, where: str, always: str) -> ToolQuestion:
        question = super().__new__(cls, text)
        question.asks, question.where, question.always = asks, where, always
        return question
